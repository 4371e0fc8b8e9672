//! The scripted flight of `farsight world fly`: three legs over the world joined by
//! two teleports, streaming prefetched at each teleport's target beforehand, and a
//! terrain edit (a crater or a mound) ahead of the camera every few frames.

use glam::Vec3;

use crate::manifest::WorldManifest;
use crate::record::Edit;

/// Frames before a teleport during which its target is a second streaming source.
pub const PREFETCH_FRAMES: u32 = 30;

/// One frame of the flight.
#[derive(Clone, Debug, PartialEq)]
pub struct FlightFrame {
    /// The camera's position.
    pub camera: Vec3,
    /// The point the camera looks at.
    pub target: Vec3,
    /// The camera jumped here this frame.
    pub teleport: bool,
    /// Where the camera will teleport soon, to stream in ahead.
    pub prefetch: Option<Vec3>,
    /// Terrain edits made this frame (a crater or a mound ahead of the camera, every `edit_every` frames).
    pub edits: Vec<Edit>,
}

/// The flight: a pure function of the manifest and the frame count.
#[derive(Clone, Debug)]
pub struct Flight {
    extent: [f32; 2],
    params: farsight_terrain::TerrainGeneratorConfig,
    frames: u32,
    /// An edit every this many frames (0: none).
    pub edit_every: u32,
    /// Height above the ground.
    pub altitude: f32,
    /// Units flown per frame at most (3: 180 units a second at 60 frames a second).
    pub speed: f32,
}

impl Flight {
    /// A flight of `frames` frames over the world `manifest` describes, in three legs.
    pub fn new(manifest: &WorldManifest, frames: u32) -> Self {
        Self {
            extent: manifest.extent,
            params: manifest.terrain.params(),
            frames: frames.max(1),
            edit_every: 25,
            altitude: 45.0,
            speed: 3.0,
        }
    }

    fn leg_len(&self) -> u32 {
        self.frames.div_ceil(3).max(1)
    }

    /// The ground height at `(x, z)`.
    pub fn ground(&self, x: f32, z: f32) -> f32 {
        self.params.height(x, z)
    }

    fn pose(&self, leg: u32, t: f32) -> (Vec3, Vec3) {
        let [w, d] = self.extent;
        let (start, end) = match leg {
            0 => ([0.15, 0.15], [0.75, 0.6]),
            1 => ([0.85, 0.2], [0.3, 0.45]),
            _ => ([0.5, 0.9], [0.55, 0.25]),
        };
        let p = |a: [f32; 2]| Vec3::new(a[0] * w, 0.0, a[1] * d);
        let (a, b) = (p(start), p(end));
        let dir = (b - a).normalize_or(Vec3::X);
        // At most `speed` units a frame, whatever the world's size.
        let along = (b - a).length().min(self.speed * self.leg_len() as f32);
        let mut pos = a + dir * along * t;
        pos.y = self.ground(pos.x, pos.z) + self.altitude;
        let ahead = pos + dir * 120.0;
        let target = Vec3::new(ahead.x, self.ground(ahead.x, ahead.z), ahead.z);
        (pos, target)
    }

    fn leg_of(&self, frame: u32) -> (u32, f32) {
        let n = self.leg_len();
        let leg = (frame / n).min(2);
        let t = (frame - leg * n) as f32 / n as f32;
        (leg, t.min(1.0))
    }

    /// Frame `frame` of the flight.
    pub fn frame(&self, frame: u32) -> FlightFrame {
        let (leg, t) = self.leg_of(frame);
        let (camera, target) = self.pose(leg, t);
        let n = self.leg_len();
        let teleport = frame > 0 && frame % n == 0 && leg == frame / n;
        let next = (frame / n + 1) * n;
        let prefetch = (next < self.frames && next - frame <= PREFETCH_FRAMES && leg < 2)
            .then(|| self.pose(leg + 1, 0.0).0);
        let mut edits = Vec::new();
        if self.edit_every > 0 && frame % self.edit_every == self.edit_every / 2 {
            let ahead = camera + (target - camera).normalize_or(Vec3::X) * 60.0;
            let y = self.ground(ahead.x, ahead.z);
            edits.push(Edit {
                center: [ahead.x, y, ahead.z],
                radius: 10.0,
                carve: (frame / self.edit_every) % 2 == 0,
            });
        }
        FlightFrame {
            camera,
            target,
            teleport,
            prefetch,
            edits,
        }
    }
}
