//! Where the view comes from: a host's view, else the held or lowest-slot active camera.

use glam::{Mat4, Quat, Vec3};

/// A camera in a [`CameraStore`]: its slot and the slot's generation, so an id kept
/// across a removal never names the stranger that later takes the same slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CameraId {
    slot: u32,
    generation: u32,
}

impl CameraId {
    /// The slot index (lower slots win the rescan).
    pub fn slot(self) -> u32 {
        self.slot
    }
}

/// How a camera maps its view volume to the screen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Projection {
    /// Vertical field of view in radians, width / height, clip distances.
    Perspective {
        /// Vertical field of view, radians, in `(0, pi)`.
        fov_y: f32,
        /// Viewport width over height.
        aspect: f32,
        /// Distance to the near clip plane, world units, above 0.
        near: f32,
        /// Distance to the far clip plane, world units, beyond `near`.
        far: f32,
    },
    /// Half the view volume's height in world units.
    Orthographic {
        /// Half the view volume's height, world units.
        half_height: f32,
        /// Viewport width over height (the half-width is `half_height * aspect`).
        aspect: f32,
        /// Distance to the near clip plane, world units.
        near: f32,
        /// Distance to the far clip plane, world units, beyond `near`.
        far: f32,
    },
}

impl Projection {
    /// Right-handed, depth in `[0, 1]`.
    pub fn matrix(&self) -> Mat4 {
        match *self {
            Projection::Perspective {
                fov_y,
                aspect,
                near,
                far,
            } => Mat4::perspective_rh(fov_y, aspect, near, far),
            Projection::Orthographic {
                half_height,
                aspect,
                near,
                far,
            } => {
                let hw = half_height * aspect;
                Mat4::orthographic_rh(-hw, hw, -half_height, half_height, near, far)
            }
        }
    }
}

/// A scene camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// The camera's lens.
    pub projection: Projection,
    /// Whether the resolver may pick it; an inactive camera is still usable through
    /// [`HostView::Through`].
    pub active: bool,
    /// The camera's world pose; `None` while it has no transform (it cannot be used).
    pub world: Option<Mat4>,
    /// Depth of field: the distance held in focus, in world units.
    pub focus_distance: f32,
    /// Depth of field strength; 0 turns it off.
    pub dof_amount: f32,
    /// Depth of field: the widest blur, as a fraction of the viewport's height.
    pub dof_max_blur: f32,
}

impl Camera {
    /// An active camera with pose `world` (camera to world) and depth of field off.
    pub fn new(projection: Projection, world: Mat4) -> Self {
        Self {
            projection,
            active: true,
            world: Some(world),
            focus_distance: 0.0,
            dof_amount: 0.0,
            dof_max_blur: 0.0,
        }
    }

    /// A camera at `eye` looking at `target` with +Y up.
    pub fn looking_at(projection: Projection, eye: Vec3, target: Vec3) -> Self {
        Self::new(projection, Mat4::look_at_rh(eye, target, Vec3::Y).inverse())
    }

    fn usable(&self) -> bool {
        self.world.is_some_and(|w| w.is_finite())
    }
}

/// Camera slots; a destroyed camera leaves its slot empty and bumps the slot's generation.
#[derive(Clone, Debug, Default)]
pub struct CameraStore {
    slots: Vec<(u32, Option<Camera>)>,
}

impl CameraStore {
    /// A store with no cameras.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a camera in the lowest empty slot (or a new one) and returns its id.
    pub fn insert(&mut self, c: Camera) -> CameraId {
        let slot = match self.slots.iter().position(|(_, s)| s.is_none()) {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                self.slots.len() - 1
            }
        };
        self.slots[slot].1 = Some(c);
        CameraId {
            slot: slot as u32,
            generation: self.slots[slot].0,
        }
    }

    /// Destroys the camera `id` names; a stale id is ignored.
    pub fn remove(&mut self, id: CameraId) {
        if let Some(s) = self.slots.get_mut(id.slot as usize) {
            if s.0 == id.generation && s.1.take().is_some() {
                s.0 = s.0.wrapping_add(1);
            }
        }
    }

    /// The camera `id` names, `None` once it was destroyed (even if its slot was reused).
    pub fn get(&self, id: CameraId) -> Option<&Camera> {
        self.slots
            .get(id.slot as usize)
            .filter(|s| s.0 == id.generation)
            .and_then(|s| s.1.as_ref())
    }

    /// The camera `id` names, to change; `None` once it was destroyed.
    pub fn get_mut(&mut self, id: CameraId) -> Option<&mut Camera> {
        self.slots
            .get_mut(id.slot as usize)
            .filter(|s| s.0 == id.generation)
            .and_then(|s| s.1.as_mut())
    }

    /// The live cameras, lowest slot first.
    pub fn ids(&self) -> impl Iterator<Item = CameraId> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.1.as_ref().map(|_| CameraId {
                slot: i as u32,
                generation: s.0,
            })
        })
    }

    fn lowest_active(&self) -> Option<CameraId> {
        self.ids()
            .find(|&id| self.get(id).is_some_and(|c| c.active && c.usable()))
    }
}

/// A view an authoring host offers for one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HostView {
    /// A free view: its own projection and pose, no scene camera needed.
    Free {
        /// The view's lens.
        projection: Projection,
        /// The eye in world space.
        position: Vec3,
        /// The eye's orientation (camera to world); the camera looks down its -Z.
        rotation: Quat,
    },
    /// Look through a scene camera, active or not, exactly as if it were the active one.
    Through(CameraId),
}

/// The view the frame renders through.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResolvedView {
    /// World to view: the inverse of the camera's pose.
    pub view: Mat4,
    /// View to clip, right-handed with depth in `[0, 1]`.
    pub projection: Mat4,
    /// The eye in world space.
    pub position: Vec3,
    /// The scene camera rendered through; `None` for a host's free view.
    pub camera: Option<CameraId>,
    /// Depth of field: the distance held in focus, in world units.
    pub focus_distance: f32,
    /// Depth of field strength; 0 turns it off.
    pub dof_amount: f32,
    /// Depth of field: the widest blur, as a fraction of the viewport's height.
    pub dof_max_blur: f32,
}

impl ResolvedView {
    fn of_camera(id: CameraId, c: &Camera) -> Self {
        let world = c.world.unwrap_or(Mat4::IDENTITY);
        Self {
            view: world.inverse(),
            projection: c.projection.matrix(),
            position: world.w_axis.truncate(),
            camera: Some(id),
            focus_distance: c.focus_distance,
            dof_amount: c.dof_amount,
            dof_max_blur: c.dof_max_blur,
        }
    }
}

/// Holds the camera in use across frames (docs/design/visibility-pass.md#where-the-view-comes-from).
#[derive(Clone, Debug, Default)]
pub struct ViewResolver {
    held: Option<CameraId>,
    epoch: Option<u64>,
    gap_logged: bool,
}

impl ViewResolver {
    /// A resolver holding no camera.
    pub fn new() -> Self {
        Self::default()
    }

    /// The camera currently held (not a host's view).
    pub fn held(&self) -> Option<CameraId> {
        self.held
    }

    /// A host's view wins when one is offered this frame. Otherwise the camera
    /// already held stays while it is alive, active and posed; the lowest-slot active
    /// camera is looked up only when the held one is gone or `world_epoch` changed.
    /// With no camera the frame renders nothing and one message is logged per gap.
    pub fn resolve(
        &mut self,
        host: Option<&HostView>,
        cameras: &CameraStore,
        world_epoch: u64,
    ) -> Option<ResolvedView> {
        if let Some(h) = host {
            let v = match *h {
                HostView::Free {
                    projection,
                    position,
                    rotation,
                } => {
                    let world = Mat4::from_rotation_translation(rotation, position);
                    Some(ResolvedView {
                        view: world.inverse(),
                        projection: projection.matrix(),
                        position,
                        camera: None,
                        focus_distance: 0.0,
                        dof_amount: 0.0,
                        dof_max_blur: 0.0,
                    })
                }
                HostView::Through(id) => cameras
                    .get(id)
                    .filter(|c| c.usable())
                    .map(|c| ResolvedView::of_camera(id, c)),
            };
            if v.is_some() {
                self.gap_logged = false;
                return v;
            }
        }
        if self.epoch != Some(world_epoch) {
            self.held = None;
            self.epoch = Some(world_epoch);
        }
        let keep = self
            .held
            .and_then(|id| cameras.get(id).map(|c| (id, c)))
            .filter(|(_, c)| c.active && c.usable());
        let found = match keep {
            Some(k) => Some(k),
            None => cameras
                .lowest_active()
                .and_then(|id| cameras.get(id).map(|c| (id, c))),
        };
        match found {
            Some((id, c)) => {
                self.held = Some(id);
                self.gap_logged = false;
                Some(ResolvedView::of_camera(id, c))
            }
            None => {
                self.held = None;
                if !self.gap_logged {
                    log::warn!("No active camera found for visibility");
                    self.gap_logged = true;
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn persp() -> Projection {
        Projection::Perspective {
            fov_y: 1.0,
            aspect: 1.0,
            near: 0.1,
            far: 100.0,
        }
    }

    #[test]
    fn held_camera_is_kept_until_gone_or_epoch_changes() {
        let mut cams = CameraStore::new();
        let a = cams.insert(Camera::looking_at(persp(), Vec3::Z, Vec3::ZERO));
        let b = cams.insert(Camera::looking_at(persp(), Vec3::X, Vec3::ZERO));
        cams.get_mut(a).unwrap().active = false;
        let mut r = ViewResolver::new();
        assert_eq!(r.resolve(None, &cams, 0).unwrap().camera, Some(b));
        // A lower slot turning active does not steal the view.
        cams.get_mut(a).unwrap().active = true;
        assert_eq!(r.resolve(None, &cams, 0).unwrap().camera, Some(b));
        // A new world epoch rescans: the lowest slot wins.
        assert_eq!(r.resolve(None, &cams, 1).unwrap().camera, Some(a));
        // Held camera loses its transform: fall back to the other one.
        cams.get_mut(a).unwrap().world = None;
        assert_eq!(r.resolve(None, &cams, 1).unwrap().camera, Some(b));
        cams.remove(b);
        assert!(r.resolve(None, &cams, 1).is_none());
        assert!(r.resolve(None, &cams, 1).is_none());
    }

    #[test]
    fn a_destroyed_held_camera_forces_the_rescan_even_when_its_slot_is_reused() {
        let mut cams = CameraStore::new();
        let low = cams.insert(Camera::looking_at(persp(), Vec3::Z, Vec3::ZERO));
        let held = cams.insert(Camera::looking_at(persp(), Vec3::X, Vec3::ZERO));
        cams.get_mut(low).unwrap().active = false;
        let mut r = ViewResolver::new();
        assert_eq!(r.resolve(None, &cams, 0).unwrap().camera, Some(held));
        cams.get_mut(low).unwrap().active = true;
        assert_eq!(r.resolve(None, &cams, 0).unwrap().camera, Some(held));
        // Same frame: the held camera dies and a stranger takes its slot.
        cams.remove(held);
        let stranger = cams.insert(Camera::looking_at(persp(), Vec3::Y, Vec3::ZERO));
        assert_ne!(
            stranger, held,
            "a reused slot must not give back the old id"
        );
        assert!(cams.get(held).is_none(), "the old id names a dead camera");
        assert_eq!(r.resolve(None, &cams, 0).unwrap().camera, Some(low));
    }

    #[test]
    fn host_views_win_and_need_no_scene_camera() {
        let mut cams = CameraStore::new();
        let mut r = ViewResolver::new();
        let free = HostView::Free {
            projection: persp(),
            position: Vec3::new(1.0, 2.0, 3.0),
            rotation: Quat::IDENTITY,
        };
        let v = r.resolve(Some(&free), &cams, 0).unwrap();
        assert_eq!(v.camera, None);
        assert_eq!(v.position, Vec3::new(1.0, 2.0, 3.0));
        let inactive = cams.insert(Camera {
            active: false,
            ..Camera::looking_at(persp(), Vec3::new(0.0, 5.0, 5.0), Vec3::ZERO)
        });
        let v = r
            .resolve(Some(&HostView::Through(inactive)), &cams, 0)
            .unwrap();
        assert_eq!(v.camera, Some(inactive));
        assert!((v.position - Vec3::new(0.0, 5.0, 5.0)).length() < 1e-5);
        // Nothing offered: the game's camera again; none active: nothing.
        assert!(r.resolve(None, &cams, 0).is_none());
    }
}
