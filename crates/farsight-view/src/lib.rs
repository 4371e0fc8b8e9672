//! The per-frame visibility pass of farsight (docs/design/visibility-pass.md) with entity LOD
//! (docs/design/entity-lod.md).
//!
//! Objects (mesh instances) live in an [`ObjectStore`]: flat columns indexed by a
//! stable `u32`, one per property, hot and cold data apart. Every frame
//! [`VisibilitySystem::update`] resolves the view ([`ViewResolver`]), then runs one
//! parallel pass over all objects in which each worker writes only its own indices:
//! validity, world matrix, posed or stored local box, world box by Arvo, the output
//! columns, the frustum / distance / screen-size culls, and the LOD level (chosen
//! for every valid object, visible or not, so shadow and capture passes draw the
//! same level). A serial gather then builds the visible list in storage order and
//! the scene list with shadow casters first, and applies LOD changes (events, active
//! mesh ids, fades) for the few objects whose level moved.
//!
//! All selection rules come from `farsight-lod`; all geometry from `farsight-geom`.
//! This crate knows nothing about files, GPUs or streaming: residency is a flag a
//! streamer sets on an LOD level, and the renderer reads [`Visibility`].
//! Steady-state frames allocate nothing: every column is resized in place.
//!
//! ```
//! use farsight_geom::Aabb;
//! use farsight_view::{
//!     Camera, CameraStore, FrameContext, MaterialHandle, MeshHandle, ObjectDesc, ObjectStore,
//!     Projection, RenderConfig, VisibilitySystem,
//! };
//! use glam::{Mat4, Vec3};
//!
//! // Two unit cubes: one in front of the camera, one behind it.
//! let cube = Aabb::new(Vec3::splat(-0.5), Vec3::splat(0.5));
//! let mut store = ObjectStore::new();
//! let front = Mat4::from_translation(Vec3::new(0.0, 0.0, -10.0));
//! let behind = Mat4::from_translation(Vec3::new(0.0, 0.0, 10.0));
//! let a = store.insert(ObjectDesc::new(front, cube, MeshHandle(0), MaterialHandle(0)));
//! let _b = store.insert(ObjectDesc::new(behind, cube, MeshHandle(0), MaterialHandle(0)));
//!
//! // A camera at the origin looking down -Z.
//! let lens = Projection::Perspective { fov_y: 1.0, aspect: 1.0, near: 0.1, far: 100.0 };
//! let mut cameras = CameraStore::new();
//! cameras.insert(Camera::looking_at(lens, Vec3::ZERO, Vec3::NEG_Z));
//!
//! let settings = RenderConfig::default();
//! let mut pass = VisibilitySystem::new();
//! let ctx = FrameContext {
//!     frame: 1,
//!     host_view: None,
//!     cameras: &cameras,
//!     world_epoch: 0,
//!     settings: &settings,
//!     stereo_eyes: None,
//! };
//! let vis = pass.update(&mut store, &ctx);
//! assert!(vis.has_camera);
//! assert_eq!(vis.objects.visible, [a.0]); // only the cube in front
//! assert_eq!(vis.objects.draws[a.0 as usize].mesh, MeshHandle(0));
//! ```
#![warn(missing_docs)]

mod camera;
mod lod;
mod objects;
mod output;
mod pass;
// Synthetic city scenes for the demo, tests and benches: not API.
#[doc(hidden)]
pub mod scenes;
mod skin;

pub use camera::{Camera, CameraId, CameraStore, HostView, Projection, ResolvedView, ViewResolver};
pub use lod::{EntityLod, EntityLodLevel, LodChanged, LodComponentError, Residency};
pub use objects::{
    MaterialHandle, MeshHandle, ObjectDesc, ObjectId, ObjectStore, Transform, INVALID_HANDLE,
};
pub use output::{FadeDraw, ObjectDraw, RenderObjects, Visibility};
pub use pass::{FrameContext, PassStats, RenderConfig, VisibilitySystem};
pub use skin::{PoseSlice, Skin};
