//! Screen-space error: how many pixels a world-space error covers.

use glam::Mat4;

/// What error projection needs from a projection matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProjectionInfo {
    /// `projection[1][1]`.
    pub p11: f32,
    /// True for an orthographic projection: then `p11` is `2 / height` of the view
    /// volume and error in pixels does not depend on distance.
    pub orthographic: bool,
}

impl ProjectionInfo {
    /// Reads `p11` and whether the projection is orthographic from a matrix.
    pub fn from_matrix(projection: &Mat4) -> Self {
        Self {
            p11: farsight_geom::p11(projection),
            orthographic: farsight_geom::is_orthographic(projection),
        }
    }

    /// A perspective projection with vertical field of view `fov_y` (radians).
    pub fn perspective(fov_y: f32) -> Self {
        Self {
            p11: 1.0 / (fov_y * 0.5).tan(),
            orthographic: false,
        }
    }
}

/// Pixels covered by one world unit at `distance` on a viewport `viewport_height`
/// pixels tall: the view volume is `2 * distance / p11` units tall there (`2 / p11`
/// under an orthographic projection, whatever the distance). At or behind the eye a
/// unit covers everything: `f32::INFINITY`.
#[inline]
pub fn pixels_per_unit(distance: f32, projection: ProjectionInfo, viewport_height: f32) -> f32 {
    if projection.orthographic {
        return projection.p11 * viewport_height * 0.5;
    }
    if distance <= 0.0 {
        return f32::INFINITY;
    }
    projection.p11 * viewport_height * 0.5 / distance
}

/// Pixels covered by a world-space error of `error` units at `distance`.
#[inline]
pub fn screen_space_error_px(
    error: f32,
    distance: f32,
    projection: ProjectionInfo,
    viewport_height: f32,
) -> f32 {
    if error <= 0.0 {
        return 0.0;
    }
    error * pixels_per_unit(distance, projection, viewport_height)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_unit_at_the_distance_where_the_view_is_1080_units_tall() {
        let p = ProjectionInfo::perspective(60f32.to_radians());
        // View height at distance d is 2 d tan(30 deg); it equals 1080 units at:
        let d = 1080.0 / (2.0 * 30f32.to_radians().tan());
        assert!((pixels_per_unit(d, p, 1080.0) - 1.0).abs() < 1e-4);
        assert!((screen_space_error_px(2.0, d, p, 1080.0) - 2.0).abs() < 1e-4);
        assert!((screen_space_error_px(2.0, 2.0 * d, p, 1080.0) - 1.0).abs() < 1e-4);
        assert_eq!(screen_space_error_px(0.0, d, p, 1080.0), 0.0);
        assert_eq!(pixels_per_unit(0.0, p, 1080.0), f32::INFINITY);
    }

    #[test]
    fn orthographic_ignores_distance() {
        let m = Mat4::orthographic_rh(-10.0, 10.0, -10.0, 10.0, 0.1, 100.0);
        let p = ProjectionInfo::from_matrix(&m);
        assert!(p.orthographic);
        // 20 units tall on 1000 pixels: 50 px per unit at any distance.
        assert!((pixels_per_unit(5.0, p, 1000.0) - 50.0).abs() < 1e-3);
        assert!((pixels_per_unit(500.0, p, 1000.0) - 50.0).abs() < 1e-3);
    }
}
