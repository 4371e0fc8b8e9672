//! Selection by screen size (docs/design/entity-lod.md#choosing-a-level-by-screen-size): each level ends where the object covers the
//! next level's share of the viewport height.

use glam::Mat4;

/// `projection[1][1]` of the view LOD sizes are measured against, once per pass.
/// `None` means the stored distances apply: an orthographic projection, or a
/// projection that is still the identity (a stereo eye that has not rendered yet).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Reach {
    /// No perspective view: levels switch at their stored distances.
    #[default]
    None,
    /// A perspective view's `projection[1][1]` (`1 / tan(fov_y / 2)`), positive.
    Perspective(f32),
}

impl Reach {
    /// The reach of a single view.
    pub fn from_projection(projection: &Mat4) -> Self {
        if *projection == Mat4::IDENTITY || farsight_geom::is_orthographic(projection) {
            return Reach::None;
        }
        let p = farsight_geom::p11(projection);
        if p.is_finite() && p > 0.0 {
            Reach::Perspective(p)
        } else {
            Reach::None
        }
    }

    /// Stereo: the eyes render after the LOD update, so the reach is the larger of the
    /// two eyes' reaches from the frame rendered last. An eye still at the identity
    /// (never rendered) contributes nothing; with neither, stored distances apply.
    pub fn stereo(eye0: &Mat4, eye1: &Mat4) -> Self {
        match (Self::from_projection(eye0), Self::from_projection(eye1)) {
            (Reach::Perspective(a), Reach::Perspective(b)) => Reach::Perspective(a.max(b)),
            (Reach::Perspective(a), Reach::None) | (Reach::None, Reach::Perspective(a)) => {
                Reach::Perspective(a)
            }
            (Reach::None, Reach::None) => Reach::None,
        }
    }

    /// The `p11` of a perspective reach, `None` when stored distances apply.
    #[inline]
    pub fn value(self) -> Option<f32> {
        match self {
            Reach::None => None,
            Reach::Perspective(p) => Some(p),
        }
    }
}

/// `world_radius * reach / screen_percentage`: the distance at which a sphere of
/// `world_radius` covers `screen_percentage` of the viewport height.
#[inline]
pub fn screen_size_switch_distance(world_radius: f32, reach: f32, screen_percentage: f32) -> f32 {
    world_radius * reach / screen_percentage
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LevelSpec, LodConfig, LodLevels, LodSelector};

    fn chain() -> LodLevels {
        LodLevels::new(vec![
            LevelSpec {
                max_distance: 10.0,
                screen_percentage: None,
            },
            LevelSpec {
                max_distance: 20.0,
                screen_percentage: Some(0.5),
            },
            LevelSpec {
                max_distance: 40.0,
                screen_percentage: Some(0.25),
            },
            LevelSpec {
                max_distance: 80.0,
                screen_percentage: None,
            },
        ])
        .unwrap()
        .by_screen_size(None)
    }

    fn selector(fov_deg: f32) -> LodSelector {
        let proj = Mat4::perspective_rh(fov_deg.to_radians(), 1.0, 0.1, 1e4);
        LodSelector::new(&proj, Reach::from_projection(&proj), &LodConfig::default())
    }

    #[test]
    fn switch_distances_follow_radius_and_field_of_view() {
        let l = chain();
        let s60 = selector(60.0);
        let reach60 = 1.0 / 30f32.to_radians().tan();
        // radius 2: level 0 ends at 2 * reach / 0.5, level 1 at 2 * reach / 0.25.
        assert!((s60.switch_distance(&l, 0, 2.0) - 4.0 * reach60).abs() < 1e-4);
        assert!((s60.switch_distance(&l, 1, 2.0) - 8.0 * reach60).abs() < 1e-4);
        // Level 2's successor has no screen size: the stored 40 applies (fov-scaled: 1).
        assert!((s60.switch_distance(&l, 2, 2.0) - 40.0).abs() < 1e-3);
        // Twice the radius switches twice as far.
        assert!((s60.switch_distance(&l, 0, 4.0) - 8.0 * reach60).abs() < 1e-4);
        // A 30-degree view: reach 1/tan(15 deg) = 3.73, switches 2.15x further out.
        let s30 = selector(30.0);
        let reach30 = 1.0 / 15f32.to_radians().tan();
        assert!((s30.switch_distance(&l, 0, 2.0) - 4.0 * reach30).abs() < 1e-4);
        assert_eq!(s30.select(&l, 4.0 * reach60 + 0.5, 2.0, None), 0);
        assert_eq!(s60.select(&l, 4.0 * reach60 + 0.5, 2.0, None), 1);
    }

    #[test]
    fn stored_distances_under_orthographic_identity_and_plain_components() {
        let l = chain();
        let ortho = Mat4::orthographic_rh(-5.0, 5.0, -5.0, 5.0, 0.1, 100.0);
        let so = LodSelector::new(&ortho, Reach::from_projection(&ortho), &Default::default());
        assert_eq!(so.switch_distance(&l, 0, 2.0), 10.0);
        let si = LodSelector::new(
            &Mat4::IDENTITY,
            Reach::from_projection(&Mat4::IDENTITY),
            &Default::default(),
        );
        assert_eq!(si.reach, Reach::None);
        assert_eq!(si.switch_distance(&l, 1, 2.0), 20.0);
        // A component that does not select by screen size ignores the reach.
        let plain = LodLevels::from_distances(&[10.0, 20.0]).unwrap();
        let s60 = selector(60.0);
        assert!((s60.switch_distance(&plain, 0, 2.0) - 10.0).abs() < 1e-4);
    }

    #[test]
    fn stereo_takes_the_larger_eye_and_waits_for_rendered_eyes() {
        let a = Mat4::perspective_rh(90f32.to_radians(), 1.0, 0.1, 100.0);
        let b = Mat4::perspective_rh(80f32.to_radians(), 1.0, 0.1, 100.0);
        let rb = farsight_geom::p11(&b);
        assert_eq!(Reach::stereo(&a, &b), Reach::Perspective(rb));
        assert_eq!(Reach::stereo(&Mat4::IDENTITY, &Mat4::IDENTITY), Reach::None);
        assert_eq!(Reach::stereo(&Mat4::IDENTITY, &b), Reach::Perspective(rb));
    }
}
