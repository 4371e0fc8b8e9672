//! The throttle on the full per-entity pass (docs/design/entity-lod.md#the-throttle).

use glam::Vec3;

/// Decides, once per frame, whether the full LOD pass runs: always on the first call,
/// then every `interval` frames, or at once when the camera moved more than
/// `min_displacement` since the last full pass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LodThrottle {
    frames_since_full: u32,
    last_camera: Option<Vec3>,
}

impl LodThrottle {
    /// A throttle that runs the full pass on its first call.
    pub fn new() -> Self {
        Self::default()
    }

    /// Call exactly once per frame. `interval` 0 or 1 runs every frame.
    pub fn should_run(&mut self, camera: Vec3, interval: u32, min_displacement: f32) -> bool {
        let run = match self.last_camera {
            None => true,
            Some(last) => {
                self.frames_since_full + 1 >= interval.max(1)
                    || camera.distance_squared(last) > min_displacement * min_displacement
                    || !camera.is_finite()
            }
        };
        if run {
            self.frames_since_full = 0;
            self.last_camera = Some(camera);
        } else {
            self.frames_since_full += 1;
        }
        run
    }

    /// Forget the last pass (a new scene): the next call runs.
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_call_then_every_fourth_frame() {
        let mut t = LodThrottle::new();
        let runs: Vec<bool> = (0..10).map(|_| t.should_run(Vec3::ZERO, 4, 0.5)).collect();
        assert_eq!(
            runs,
            [true, false, false, false, true, false, false, false, true, false],
            "full passes on frames 0, 4, 8"
        );
    }

    #[test]
    fn camera_jump_forces_a_pass_and_small_drift_does_not() {
        let mut t = LodThrottle::new();
        assert!(t.should_run(Vec3::ZERO, 4, 0.5));
        assert!(!t.should_run(Vec3::new(0.3, 0.0, 0.0), 4, 0.5));
        // Drift is measured from the last full pass, not the last frame: 0.3 + 0.3.
        assert!(t.should_run(Vec3::new(0.6, 0.0, 0.0), 4, 0.5));
        assert!(
            !t.should_run(Vec3::new(0.6, 0.0, 0.5), 4, 0.5),
            "exactly 0.5 is not more"
        );
        assert!(t.should_run(Vec3::new(10.0, 0.0, 0.0), 4, 0.5));
        let mut every = LodThrottle::new();
        assert!((0..5).all(|_| every.should_run(Vec3::ZERO, 1, 0.5)));
    }
}
