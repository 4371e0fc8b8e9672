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

mod camera;
mod lod;
mod objects;
mod output;
mod pass;
pub mod scenes;
mod skin;

pub use camera::{Camera, CameraId, CameraStore, HostView, Projection, ResolvedView, ViewResolver};
pub use lod::{EntityLod, EntityLodLevel, LodChanged, LodComponentError, Residency};
pub use objects::{
    MaterialHandle, MeshHandle, ObjectDesc, ObjectId, ObjectStore, Transform, INVALID_HANDLE,
};
pub use output::{ObjectDraw, RenderObjects, Visibility};
pub use pass::{FrameContext, PassStats, RenderSettings, VisibilitySystem};
pub use skin::{PoseSlice, Skin};
