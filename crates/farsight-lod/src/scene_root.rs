//! The camera position (docs/design/entity-lod.md#the-camera-every-rule-measures-from) every LOD rule measures from.

use glam::{Mat4, Vec3};

/// The camera in scene-root space (docs/design/entity-lod.md#the-camera-every-rule-measures-from). `scene_root`
/// is the scene root's local-to-world transform (identity when the root never moved);
/// entity LOD distances, the throttle's displacement and tile streaming all measure
/// from this point, so they agree when the root is translated (XR head motion).
#[inline]
pub fn effective_camera_position(camera: Vec3, scene_root: &Mat4) -> Vec3 {
    if *scene_root == Mat4::IDENTITY {
        return camera;
    }
    scene_root.inverse().transform_point3(camera)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_camera_is_taken_into_root_space() {
        let c = Vec3::new(1.0, 2.0, 3.0);
        assert_eq!(effective_camera_position(c, &Mat4::IDENTITY), c);
        let root = Mat4::from_translation(Vec3::new(10.0, 0.0, 0.0));
        assert_eq!(
            effective_camera_position(c, &root),
            Vec3::new(-9.0, 2.0, 3.0)
        );
    }
}
