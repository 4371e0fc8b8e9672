//! Bounding spheres.

use glam::Vec3;

use crate::Aabb;

/// A sphere by centre and radius; valid when finite with `radius >= 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sphere {
    /// The centre point.
    pub center: Vec3,
    /// The radius, in the same units as `center`; zero is a point.
    pub radius: f32,
}

impl Sphere {
    /// A sphere from centre and radius, taken as given (no check).
    #[inline]
    pub const fn new(center: Vec3, radius: f32) -> Self {
        Self { center, radius }
    }

    /// The sphere around a box (centre of the box, half its diagonal).
    #[inline]
    pub fn from_aabb(b: &Aabb) -> Self {
        Self {
            center: b.center(),
            radius: b.radius(),
        }
    }

    /// Distance from `p` to the nearest point of the sphere, zero inside.
    #[inline]
    pub fn distance_to_point(&self, p: Vec3) -> f32 {
        (self.center.distance(p) - self.radius).max(0.0)
    }

    /// True when the sphere and the box share a point (touching counts); the same as
    /// [`sphere_intersects_aabb`].
    #[inline]
    pub fn intersects_aabb(&self, b: &Aabb) -> bool {
        sphere_intersects_aabb(self, b)
    }

    /// True when centre and radius are finite and the radius is not negative.
    #[inline]
    pub fn valid(&self) -> bool {
        self.center.is_finite() && self.radius.is_finite() && self.radius >= 0.0
    }
}

/// Sphere against box by the box's closest point to the centre (touching counts).
#[inline]
pub fn sphere_intersects_aabb(s: &Sphere, b: &Aabb) -> bool {
    b.distance_squared(s.center) <= s.radius * s.radius
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sphere_box() {
        let b = Aabb::new(Vec3::ZERO, Vec3::ONE);
        assert!(sphere_intersects_aabb(
            &Sphere::new(Vec3::new(2.0, 0.5, 0.5), 1.0),
            &b
        ));
        assert!(!sphere_intersects_aabb(
            &Sphere::new(Vec3::new(2.01, 0.5, 0.5), 1.0),
            &b
        ));
        // Near a corner: the axis-wise test would accept, the closest point rejects.
        assert!(!sphere_intersects_aabb(
            &Sphere::new(Vec3::new(1.8, 1.8, 1.8), 1.0),
            &b
        ));
        assert!(sphere_intersects_aabb(
            &Sphere::new(Vec3::splat(0.5), 0.01),
            &b
        ));
    }
}
