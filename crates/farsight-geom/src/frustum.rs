//! View frusta extracted from a view-projection matrix, and the box test of the cull.

use glam::{Mat4, Vec3, Vec4};

use crate::{Aabb, CenterExtent, Sphere};

/// Six planes `(n, d)` with `dot(n, p) + d >= 0` inside, normals of unit length, in the
/// order left, right, bottom, top, near, far; plus each normal's absolute value for the
/// branchless box test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frustum {
    /// The planes as `(normal.xyz, d)`, normals unit length, inside where
    /// `dot(normal, p) + d >= 0`.
    pub planes: [Vec4; 6],
    /// `abs()` of each plane's normal: a box's projected radius on the plane is
    /// `dot(abs_normal, extent)`.
    pub abs_normals: [Vec3; 6],
    /// The same planes transposed four at a time (planes 0-3, then 4, 5, 4, 5) for
    /// the vector box test.
    lanes: [PlaneLanes; 2],
}

/// Four planes in structure-of-arrays form: lane `k` of each vector is plane `k`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PlaneLanes {
    nx: Vec4,
    ny: Vec4,
    nz: Vec4,
    nw: Vec4,
    ax: Vec4,
    ay: Vec4,
    az: Vec4,
}

impl PlaneLanes {
    fn new(planes: [Vec4; 4]) -> Self {
        let col =
            |f: fn(Vec4) -> f32| Vec4::new(f(planes[0]), f(planes[1]), f(planes[2]), f(planes[3]));
        Self {
            nx: col(|p| p.x),
            ny: col(|p| p.y),
            nz: col(|p| p.z),
            nw: col(|p| p.w),
            ax: col(|p| p.x.abs()),
            ay: col(|p| p.y.abs()),
            az: col(|p| p.z.abs()),
        }
    }

    /// `dist + radius >= 0` for all four planes, the sums in the scalar path's order.
    #[inline]
    fn keeps(&self, c: Vec3, e: Vec3) -> bool {
        let dist = self.nx * c.x + self.ny * c.y + self.nz * c.z + self.nw;
        let radius = self.ax * e.x + self.ay * e.y + self.az * e.z;
        (dist + radius).cmpge(Vec4::ZERO).all()
    }
}

impl Frustum {
    /// Gribb-Hartmann extraction from `projection * view` with clip depth in `[0, 1]`.
    ///
    /// A plane whose normal has zero length (a degenerate matrix) becomes "always
    /// inside" so the frustum stays conservative instead of producing NaN.
    pub fn from_view_projection(m: &Mat4) -> Self {
        let r0 = m.row(0);
        let r1 = m.row(1);
        let r2 = m.row(2);
        let r3 = m.row(3);
        let raw = [r3 + r0, r3 - r0, r3 + r1, r3 - r1, r2, r3 - r2];
        let planes = raw.map(|p| {
            let len = p.truncate().length();
            if len > 0.0 && len.is_finite() {
                p / len
            } else {
                Vec4::new(0.0, 0.0, 0.0, f32::INFINITY)
            }
        });
        let abs_normals = planes.map(|p| p.truncate().abs());
        let lanes = [
            PlaneLanes::new([planes[0], planes[1], planes[2], planes[3]]),
            PlaneLanes::new([planes[4], planes[5], planes[4], planes[5]]),
        ];
        Self {
            planes,
            abs_normals,
            lanes,
        }
    }

    /// Signed distance of `p` to plane `i` (positive inside).
    #[inline]
    pub fn plane_distance(&self, i: usize, p: Vec3) -> f32 {
        self.planes[i].truncate().dot(p) + self.planes[i].w
    }

    /// Centre plus projected half-extent: a box is rejected only when it lies wholly
    /// on the outside of one plane. Conservative: a box outside the frustum but
    /// straddling two planes near a corner is kept; a box that intersects is never
    /// rejected.
    #[inline]
    pub fn intersects_aabb(&self, b: &Aabb) -> bool {
        self.intersects_center_extent(&CenterExtent::from_aabb(b))
    }

    /// [`Frustum::intersects_aabb`] for a box already in centre/extent form.
    #[inline]
    pub fn intersects_center_extent(&self, b: &CenterExtent) -> bool {
        let c = Vec3::from(b.center);
        let e = Vec3::from(b.extent);
        self.lanes[0].keeps(c, e) & self.lanes[1].keeps(c, e)
    }

    /// The scalar reference of [`Frustum::intersects_aabb`], one plane at a time.
    pub fn intersects_aabb_scalar(&self, b: &Aabb) -> bool {
        let c = b.center();
        let e = b.extent();
        let mut inside = true;
        for i in 0..6 {
            let n = self.planes[i];
            let dist = n.x * c.x + n.y * c.y + n.z * c.z + n.w;
            let radius = self.abs_normals[i].dot(e);
            // Non-short-circuit `&` keeps the loop branch-free.
            inside &= dist + radius >= 0.0;
        }
        inside
    }

    /// Conservative sphere test: false only when the sphere lies wholly outside one
    /// plane, so a sphere near a frustum corner may pass while outside.
    #[inline]
    pub fn intersects_sphere(&self, s: &Sphere) -> bool {
        self.planes
            .iter()
            .all(|p| p.truncate().dot(s.center) + p.w >= -s.radius)
    }
}

/// Free-function form of [`Frustum::intersects_aabb`].
#[inline]
pub fn frustum_intersects_aabb(f: &Frustum, b: &Aabb) -> bool {
    f.intersects_aabb(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_view_projection(rng: &mut ChaCha8Rng) -> (Mat4, Mat4) {
        let eye = Vec3::new(
            rng.random_range(-20.0..20.0),
            rng.random_range(-20.0..20.0),
            rng.random_range(-20.0..20.0),
        );
        let target = eye
            + Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            )
            .normalize_or(Vec3::X);
        let up = if (target - eye).normalize().y.abs() > 0.99 {
            Vec3::X
        } else {
            Vec3::Y
        };
        let view = Mat4::look_at_rh(eye, target, up);
        let proj = if rng.random_bool(0.8) {
            Mat4::perspective_rh(
                rng.random_range(0.3..2.5),
                rng.random_range(0.5..2.5),
                0.1,
                60.0,
            )
        } else {
            let w = rng.random_range(2.0..30.0);
            let h = rng.random_range(2.0..30.0);
            Mat4::orthographic_rh(-w, w, -h, h, 0.1, 60.0)
        };
        (proj * view, (proj * view).inverse())
    }

    fn random_box(rng: &mut ChaCha8Rng) -> Aabb {
        let c = Vec3::new(
            rng.random_range(-60.0..60.0),
            rng.random_range(-60.0..60.0),
            rng.random_range(-60.0..60.0),
        );
        let e = Vec3::new(
            rng.random_range(0.0..8.0),
            rng.random_range(0.0..8.0),
            rng.random_range(0.0..8.0),
        );
        Aabb::from_center_extent(c, e)
    }

    /// The brute-force reference: rejected exactly when all eight corners lie outside
    /// one plane.
    fn corner_test(f: &Frustum, b: &Aabb) -> bool {
        let corners = b.corners();
        (0..6).all(|i| corners.iter().any(|&c| f.plane_distance(i, c) >= -1e-4))
    }

    #[test]
    fn never_rejects_what_eight_corner_test_keeps() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut kept = 0;
        for _ in 0..200 {
            let (vp, _) = random_view_projection(&mut rng);
            let f = Frustum::from_view_projection(&vp);
            for _ in 0..500 {
                let b = random_box(&mut rng);
                let reference = corner_test(&f, &b);
                assert_eq!(
                    f.intersects_aabb(&b),
                    f.intersects_aabb_scalar(&b),
                    "paths agree"
                );
                if reference {
                    kept += 1;
                    assert!(
                        f.intersects_aabb(&b),
                        "rejected {b:?}, which the corner test keeps"
                    );
                    assert!(
                        f.intersects_center_extent(&CenterExtent::from_aabb(&b)),
                        "centre/extent form rejected {b:?}, which the corner test keeps"
                    );
                }
            }
        }
        assert!(
            kept > 1000,
            "the sweep must exercise kept boxes, got {kept}"
        );
    }

    #[test]
    fn never_rejects_a_box_around_a_point_inside() {
        // Exact ground truth: a box containing a point strictly inside the frustum
        // intersects it. Points come from unprojecting random NDC coordinates.
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for _ in 0..200 {
            let (vp, inv) = random_view_projection(&mut rng);
            let f = Frustum::from_view_projection(&vp);
            for _ in 0..200 {
                let ndc = Vec3::new(
                    rng.random_range(-0.999..0.999),
                    rng.random_range(-0.999..0.999),
                    rng.random_range(0.001..0.999),
                );
                let p = inv.project_point3(ndc);
                let lo = Vec3::new(
                    rng.random_range(0.0..5.0),
                    rng.random_range(0.0..5.0),
                    rng.random_range(0.0..5.0),
                );
                let hi = Vec3::new(
                    rng.random_range(0.0..5.0),
                    rng.random_range(0.0..5.0),
                    rng.random_range(0.0..5.0),
                );
                let b = Aabb::new(p - lo, p + hi);
                assert!(f.intersects_aabb(&b), "box {b:?} holds inside point {p:?}");
            }
        }
    }

    #[test]
    fn rejects_boxes_behind_and_beside() {
        let proj = Mat4::perspective_rh(1.0, 1.0, 0.1, 100.0);
        let view = Mat4::look_at_rh(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y);
        let f = Frustum::from_view_projection(&(proj * view));
        let unit = Vec3::splat(0.5);
        assert!(f.intersects_aabb(&Aabb::from_center_extent(Vec3::new(0.0, 0.0, -10.0), unit)));
        assert!(!f.intersects_aabb(&Aabb::from_center_extent(Vec3::new(0.0, 0.0, 10.0), unit)));
        assert!(!f.intersects_aabb(&Aabb::from_center_extent(Vec3::new(50.0, 0.0, -10.0), unit)));
        assert!(!f.intersects_aabb(&Aabb::from_center_extent(Vec3::new(0.0, 0.0, -200.0), unit)));
        assert!(f.intersects_sphere(&Sphere::new(Vec3::new(0.0, 0.0, -10.0), 1.0)));
        assert!(!f.intersects_sphere(&Sphere::new(Vec3::new(0.0, 0.0, 10.0), 1.0)));
    }
}
