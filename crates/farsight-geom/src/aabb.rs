//! Axis-aligned bounding boxes and Arvo's box transform.

use glam::{Mat4, Vec3, Vec3A};

/// Squared extent below which a box counts as degenerate (`Aabb::valid`).
pub const BOUNDS_EPSILON_SQ: f32 = 1e-12;

/// An axis-aligned box, `min <= max` on every axis when valid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// The lowest corner: the smallest coordinate on each axis.
    pub min: Vec3,
    /// The highest corner: the largest coordinate on each axis.
    pub max: Vec3,
}

impl Default for Aabb {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Aabb {
    /// The empty box: `min = +inf`, `max = -inf`. Growing it by a point gives that point.
    pub const EMPTY: Aabb = Aabb {
        min: Vec3::INFINITY,
        max: Vec3::NEG_INFINITY,
    };

    /// A box from its two corners, taken as given (no reordering, no check).
    #[inline]
    pub const fn new(min: Vec3, max: Vec3) -> Self {
        Self { min, max }
    }

    /// A box from its centre and half-size.
    #[inline]
    pub fn from_center_extent(center: Vec3, extent: Vec3) -> Self {
        Self {
            min: center - extent,
            max: center + extent,
        }
    }

    /// The smallest box holding every point; `EMPTY` for no points.
    pub fn from_points(points: impl IntoIterator<Item = Vec3>) -> Self {
        points.into_iter().fold(Self::EMPTY, |b, p| b.grow(p))
    }

    /// The midpoint of the two corners.
    #[inline]
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// Half the size on each axis.
    #[inline]
    pub fn extent(&self) -> Vec3 {
        (self.max - self.min) * 0.5
    }

    /// The full size on each axis, `max - min` (negative on some axis for an empty box).
    #[inline]
    pub fn size(&self) -> Vec3 {
        self.max - self.min
    }

    /// Radius of the sphere around the box, centred at `center()`.
    #[inline]
    pub fn radius(&self) -> f32 {
        self.extent().length()
    }

    /// True when every coordinate is finite, `min <= max`, and the box is not
    /// degenerate (`dot(extent, extent) > BOUNDS_EPSILON_SQ`). A flat box (a quad's
    /// bounds) is valid; a point or a NaN box is not.
    #[inline]
    pub fn valid(&self) -> bool {
        let e = self.extent();
        self.min.is_finite()
            && self.max.is_finite()
            && self.min.cmple(self.max).all()
            && e.dot(e) > BOUNDS_EPSILON_SQ
    }

    /// True when no point lies inside (`min > max` on some axis, e.g. `EMPTY`).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.min.cmpgt(self.max).any()
    }

    /// The smallest box holding this one and the point `p`.
    #[inline]
    #[must_use]
    pub fn grow(self, p: Vec3) -> Self {
        Self {
            min: self.min.min(p),
            max: self.max.max(p),
        }
    }

    /// The smallest box holding both boxes; `EMPTY` is its identity.
    #[inline]
    #[must_use]
    pub fn union(self, o: Aabb) -> Self {
        Self {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }

    /// The box grown by `pad` on every side.
    #[inline]
    #[must_use]
    pub fn padded(self, pad: Vec3) -> Self {
        Self {
            min: self.min - pad,
            max: self.max + pad,
        }
    }

    /// True when `p` lies inside or on the boundary.
    #[inline]
    pub fn contains_point(&self, p: Vec3) -> bool {
        self.min.cmple(p).all() && p.cmple(self.max).all()
    }

    /// True when `o` lies inside this box (touching counts).
    #[inline]
    pub fn contains(&self, o: &Aabb) -> bool {
        self.min.cmple(o.min).all() && o.max.cmple(self.max).all()
    }

    /// Closed-interval overlap: boxes that touch intersect.
    #[inline]
    pub fn intersects(&self, o: &Aabb) -> bool {
        self.min.cmple(o.max).all() && o.min.cmple(self.max).all()
    }

    /// The point of the box nearest `p` (`p` itself when inside).
    #[inline]
    pub fn closest_point(&self, p: Vec3) -> Vec3 {
        p.clamp(self.min, self.max)
    }

    /// Squared distance from `p` to the box, zero inside.
    #[inline]
    pub fn distance_squared(&self, p: Vec3) -> f32 {
        self.closest_point(p).distance_squared(p)
    }

    /// The eight corners, bit `i` of the index choosing `max` on axis `i`.
    pub fn corners(&self) -> [Vec3; 8] {
        std::array::from_fn(|i| {
            Vec3::new(
                if i & 1 != 0 { self.max.x } else { self.min.x },
                if i & 2 != 0 { self.max.y } else { self.min.y },
                if i & 4 != 0 { self.max.z } else { self.min.z },
            )
        })
    }
}

/// The world box of a local box under an affine transform, by Arvo's method: the
/// translation plus, per output axis, the sum over input axes of the smaller and
/// larger products of matrix entry and box bound. 18 multiplications instead of the
/// 8 corner transforms (and refit) it equals exactly in real arithmetic.
///
/// `m` must be affine (last row `0 0 0 1`); projective matrices need the corners.
#[inline]
pub fn transform_aabb(m: &Mat4, b: &Aabb) -> Aabb {
    // Column j of m scales input axis j; each output axis sums the extremes. The
    // columns are glam `Vec4`s (SIMD on x86_64 and aarch64), so each line below is one
    // vector operation; `transform_aabb_scalar` is the plain reference path.
    let (x, y, z) = (m.x_axis, m.y_axis, m.z_axis);
    let (ax, ex) = (x * b.min.x, x * b.max.x);
    let (ay, ey) = (y * b.min.y, y * b.max.y);
    let (az, ez) = (z * b.min.z, z * b.max.z);
    let min = m.w_axis + ax.min(ex) + ay.min(ey) + az.min(ez);
    let max = m.w_axis + ax.max(ex) + ay.max(ey) + az.max(ez);
    Aabb {
        min: min.truncate(),
        max: max.truncate(),
    }
}

/// A box as centre and half-extent in SIMD lanes: the form the per-frame cull reads,
/// since the frustum, distance and screen-size tests all start from centre and extent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CenterExtent {
    /// The box's midpoint (the fourth lane is unused).
    pub center: Vec3A,
    /// Half the size on each axis; never negative for a box made by
    /// [`transform_center_extent`] from finite input.
    pub extent: Vec3A,
}

impl CenterExtent {
    /// The same box as centre and half-size; exact for finite boxes.
    #[inline]
    pub fn from_aabb(b: &Aabb) -> Self {
        Self {
            center: b.center().into(),
            extent: b.extent().into(),
        }
    }

    /// Back to corners: `center - extent` and `center + extent`.
    #[inline]
    pub fn to_aabb(&self) -> Aabb {
        Aabb {
            min: (self.center - self.extent).into(),
            max: (self.center + self.extent).into(),
        }
    }

    /// The same rule as [`Aabb::valid`]: every lane finite, the extent not negative
    /// and not degenerate. Branch-light: `x * 0` is zero only for a finite `x`.
    #[inline]
    pub fn valid(&self) -> bool {
        let zero = self.center * 0.0 + self.extent * 0.0;
        zero.cmpeq(Vec3A::ZERO).all()
            && self.extent.cmpge(Vec3A::ZERO).all()
            && self.extent.length_squared() > BOUNDS_EPSILON_SQ
    }
}

/// Arvo's transform in centre/extent form: the centre goes through `m`, the extent
/// through the absolute values of its upper 3x3. Fifteen multiplications in four
/// vector lanes; the same box as [`transform_aabb`] up to rounding (tested against
/// the eight transformed corners). `m` must be affine.
#[inline]
pub fn transform_center_extent(m: &Mat4, b: &Aabb) -> CenterExtent {
    let c = b.center();
    let e = b.extent();
    let (x, y, z) = (
        Vec3A::from_vec4(m.x_axis),
        Vec3A::from_vec4(m.y_axis),
        Vec3A::from_vec4(m.z_axis),
    );
    CenterExtent {
        center: Vec3A::from_vec4(m.w_axis) + x * c.x + y * c.y + z * c.z,
        extent: x.abs() * e.x + y.abs() * e.y + z.abs() * e.z,
    }
}

/// The scalar reference of [`transform_aabb`]: the same sums in the same order, one
/// axis at a time. The two agree bit for bit on finite input (tested).
pub fn transform_aabb_scalar(m: &Mat4, b: &Aabb) -> Aabb {
    let mut min = m.w_axis.truncate();
    let mut max = min;
    for (col, (lo, hi)) in [m.x_axis, m.y_axis, m.z_axis].iter().zip([
        (b.min.x, b.max.x),
        (b.min.y, b.max.y),
        (b.min.z, b.max.z),
    ]) {
        let c = col.truncate();
        let a = c * lo;
        let e = c * hi;
        min += a.min(e);
        max += a.max(e);
    }
    Aabb { min, max }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn validity() {
        assert!(Aabb::new(Vec3::ZERO, Vec3::ONE).valid());
        assert!(
            Aabb::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 0.0)).valid(),
            "a flat box is valid"
        );
        assert!(
            !Aabb::new(Vec3::ONE, Vec3::ONE).valid(),
            "a point is degenerate"
        );
        assert!(!Aabb::new(Vec3::ONE, Vec3::ZERO).valid(), "inverted");
        assert!(!Aabb::EMPTY.valid());
        assert!(!Aabb::new(Vec3::ZERO, Vec3::new(f32::NAN, 1.0, 1.0)).valid());
        assert!(!Aabb::new(Vec3::ZERO, Vec3::new(f32::INFINITY, 1.0, 1.0)).valid());
    }

    #[test]
    fn transform_equals_eight_corner_refit() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..10_000 {
            let c = Vec3::new(
                rng.random_range(-50.0..50.0),
                rng.random_range(-50.0..50.0),
                0.0,
            );
            let e = Vec3::new(
                rng.random_range(0.01..10.0),
                rng.random_range(0.01..10.0),
                rng.random_range(0.01..10.0),
            );
            let b = Aabb::from_center_extent(c, e);
            let axis = Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            )
            .normalize_or(Vec3::Y);
            let m = Mat4::from_scale_rotation_translation(
                Vec3::new(
                    rng.random_range(-3.0..3.0),
                    rng.random_range(0.1..3.0),
                    rng.random_range(0.1..3.0),
                ),
                Quat::from_axis_angle(axis, rng.random_range(0.0..6.3)),
                Vec3::new(
                    rng.random_range(-1e3..1e3),
                    rng.random_range(-1e3..1e3),
                    rng.random_range(-1e3..1e3),
                ),
            );
            let fast = transform_aabb(&m, &b);
            assert_eq!(
                fast,
                transform_aabb_scalar(&m, &b),
                "vector and scalar paths agree"
            );
            let slow = Aabb::from_points(b.corners().map(|p| m.transform_point3(p)));
            let tol = 1e-3 * (1.0 + slow.size().length());
            assert!(
                (fast.min - slow.min).abs().max_element() <= tol
                    && (fast.max - slow.max).abs().max_element() <= tol,
                "Arvo {fast:?} vs corners {slow:?}"
            );
            let ce = transform_center_extent(&m, &b);
            assert!(ce.valid());
            let ce_box = ce.to_aabb();
            assert!(
                (ce_box.min - slow.min).abs().max_element() <= tol
                    && (ce_box.max - slow.max).abs().max_element() <= tol,
                "centre/extent {ce_box:?} vs corners {slow:?}"
            );
        }
    }

    #[test]
    fn center_extent_validity_matches_aabb_validity() {
        let boxes = [
            Aabb::new(Vec3::ZERO, Vec3::ONE),
            Aabb::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 0.0)),
            Aabb::new(Vec3::ONE, Vec3::ONE),
            Aabb::new(Vec3::ONE, Vec3::ZERO),
            Aabb::new(Vec3::ZERO, Vec3::new(f32::NAN, 1.0, 1.0)),
            Aabb::new(Vec3::ZERO, Vec3::new(f32::INFINITY, 1.0, 1.0)),
            Aabb::new(Vec3::new(f32::NEG_INFINITY, 0.0, 0.0), Vec3::ONE),
        ];
        for b in boxes {
            assert_eq!(CenterExtent::from_aabb(&b).valid(), b.valid(), "{b:?}");
        }
        // A transform that overflows, or carries a NaN, gives an invalid box.
        let b = Aabb::new(Vec3::ZERO, Vec3::ONE);
        let huge = Mat4::from_scale(Vec3::splat(f32::MAX));
        assert!(!transform_center_extent(&huge, &Aabb::new(Vec3::ZERO, Vec3::splat(4.0))).valid());
        let mut nan = Mat4::IDENTITY;
        nan.y_axis.z = f32::NAN;
        assert!(!transform_center_extent(&nan, &b).valid());
        let mut nan_t = Mat4::IDENTITY;
        nan_t.w_axis.x = f32::NAN;
        assert!(!transform_center_extent(&nan_t, &b).valid());
    }

    #[test]
    fn closest_point_and_distance() {
        let b = Aabb::new(Vec3::ZERO, Vec3::ONE);
        assert_eq!(b.distance_squared(Vec3::splat(0.5)), 0.0);
        assert_eq!(b.distance_squared(Vec3::new(3.0, 0.5, 0.5)), 4.0);
        assert_eq!(
            b.closest_point(Vec3::new(-1.0, 2.0, 0.5)),
            Vec3::new(0.0, 1.0, 0.5)
        );
    }
}
