//! What the pass publishes: persistent per-object columns and index lists.

use farsight_geom::Aabb;
use glam::{Mat4, Vec3};

use crate::camera::CameraId;
use crate::objects::{MaterialHandle, MeshHandle};

/// What an object is drawn with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObjectDraw {
    /// The geometry to draw: the LOD-selected mesh, if the object has LOD.
    pub mesh: MeshHandle,
    /// The object's material.
    pub material: MaterialHandle,
    /// Bones in its rig's palette slice; 0 = drawn static.
    pub skin_count: u32,
}

impl Default for ObjectDraw {
    fn default() -> Self {
        Self {
            mesh: MeshHandle::NONE,
            material: MaterialHandle::NONE,
            skin_count: 0,
        }
    }
}

/// An object cross-fading between two levels this frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FadeDraw {
    /// The object's index (its [`ObjectId`](crate::ObjectId)'s number).
    pub object: u32,
    /// The mesh of the level being faded out; the new level is in [`ObjectDraw::mesh`].
    pub previous_mesh: MeshHandle,
    /// How far the fade has gone, in `[0, 1)`: 0 draws only the old level.
    pub progress: f32,
}

/// Per-object columns, indexed by object index. Columns of objects that are not
/// drawn this frame hold stale values: read them only through the index lists.
#[derive(Default)]
pub struct RenderObjects {
    /// World matrix (local to world) of each object.
    pub models: Vec<Mat4>,
    /// World box, posed when posed.
    pub bounds: Vec<Aabb>,
    /// Mesh, material and bone count of each object.
    pub draws: Vec<ObjectDraw>,
    /// First bone of each skinned object's palette slice (its [`Skin::bone_first`](crate::Skin::bone_first)).
    pub skin_first: Vec<u32>,
    /// The caller's entity id of each object (picking, outlines).
    pub entities: Vec<u64>,
    /// Drawn LOD level per object (`u8::MAX` without LOD).
    pub lod_level: Vec<u8>,
    /// What the camera sees, in object order.
    pub visible: Vec<u32>,
    /// Every drawn object, shadow casters first.
    pub scene: Vec<u32>,
    /// `scene[..caster_count]` are the casters.
    pub caster_count: u32,
    /// Objects cross-fading this frame (empty unless fades are enabled).
    pub fades: Vec<FadeDraw>,
}

/// The frame's visibility, owned by the system and reused across frames.
#[derive(Default)]
pub struct Visibility {
    /// The per-object columns and the index lists.
    pub objects: RenderObjects,
    /// World to view of the frame's view (stale when `has_camera` is false).
    pub view: Mat4,
    /// View to clip of the frame's view, depth in `[0, 1]`.
    pub projection: Mat4,
    /// The eye in world space.
    pub camera_position: Vec3,
    /// Depth of field: the distance held in focus, world units.
    pub focus_distance: f32,
    /// Depth of field strength; 0 is off.
    pub dof_amount: f32,
    /// Depth of field: widest blur, as a fraction of the viewport's height.
    pub dof_max_blur: f32,
    /// False when no view resolved this frame: the lists are empty, draw nothing.
    pub has_camera: bool,
    /// The scene camera rendered through; `None` for a host's free view.
    pub camera: Option<CameraId>,
}

impl Visibility {
    /// The shadow casters of the scene list.
    pub fn casters(&self) -> &[u32] {
        &self.objects.scene[..self.objects.caster_count as usize]
    }
}
