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
    pub object: u32,
    pub previous_mesh: MeshHandle,
    pub progress: f32,
}

/// Per-object columns, indexed by object index. Columns of objects that are not
/// drawn this frame hold stale values: read them only through the index lists.
#[derive(Default)]
pub struct RenderObjects {
    pub models: Vec<Mat4>,
    /// World box, posed when posed.
    pub bounds: Vec<Aabb>,
    pub draws: Vec<ObjectDraw>,
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
    pub objects: RenderObjects,
    pub view: Mat4,
    pub projection: Mat4,
    pub camera_position: Vec3,
    pub focus_distance: f32,
    pub dof_amount: f32,
    pub dof_max_blur: f32,
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
