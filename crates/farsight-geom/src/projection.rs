//! Projection helpers: the numbers LOD and size culls read off a projection matrix.

use glam::Mat4;

/// The vertical field of view LOD distances are authored for (60 degrees).
pub const REFERENCE_FOV_Y: f32 = std::f32::consts::FRAC_PI_3;

/// `projection[1][1]`: `1 / tan(fov_y / 2)` for a perspective projection, `2 / height`
/// of the view volume for an orthographic one.
#[inline]
pub fn p11(projection: &Mat4) -> f32 {
    projection.y_axis.y
}

/// True for an orthographic projection (no perspective divide: `w` stays 1).
#[inline]
pub fn is_orthographic(projection: &Mat4) -> bool {
    projection.x_axis.w == 0.0
        && projection.y_axis.w == 0.0
        && projection.z_axis.w == 0.0
        && projection.w_axis.w == 1.0
}

/// Projected size in pixels of a sphere of `radius` whose centre lies `depth` in front
/// of a perspective camera: `radius * p11 / depth * viewport_height`, the bounding
/// sphere's diameter as a share of the viewport height, in pixels (the view volume is
/// `2 * depth / p11` tall at that depth). Under an orthographic projection pass
/// `depth = 1.0`: the size no longer depends on it.
///
/// A sphere at or behind the eye (`depth <= 0`) covers the screen: `f32::INFINITY`.
#[inline]
pub fn projected_pixel_size(radius: f32, depth: f32, p11: f32, viewport_height: f32) -> f32 {
    if depth <= 0.0 {
        return f32::INFINITY;
    }
    radius * p11 / depth * viewport_height
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p11_of_projections() {
        let p = Mat4::perspective_rh(REFERENCE_FOV_Y, 16.0 / 9.0, 0.1, 1000.0);
        assert!((p11(&p) - 3f32.sqrt()).abs() < 1e-5);
        assert!(!is_orthographic(&p));
        let o = Mat4::orthographic_rh(-10.0, 10.0, -5.0, 5.0, 0.1, 100.0);
        assert!(is_orthographic(&o));
        assert!((p11(&o) - 0.2).abs() < 1e-6);
        assert!(is_orthographic(&Mat4::IDENTITY));
    }

    #[test]
    fn pixel_size_matches_screen_share() {
        // A sphere whose diameter equals the view height at its depth covers the
        // whole viewport: 2r = 2 d tan(fov/2)  =>  r p11 / d = 1.
        let p = p11(&Mat4::perspective_rh(REFERENCE_FOV_Y, 1.0, 0.1, 1000.0));
        let d = 40.0;
        let r = d / p;
        assert!((projected_pixel_size(r, d, p, 1080.0) - 1080.0).abs() < 1e-2);
        assert_eq!(projected_pixel_size(1.0, 0.0, p, 1080.0), f32::INFINITY);
    }
}
