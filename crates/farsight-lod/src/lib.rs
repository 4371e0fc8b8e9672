//! Every level-of-detail selection rule of farsight, in one place.
//!
//! Pure functions and small state structs over plain numbers: a distance, a list of
//! switch distances, a projection, a residency predicate. The per-entity LOD of the
//! visibility pass, tile streaming, voxel terrain render levels, the cluster-LOD cut
//! and the building ladders all call these instead of writing their own, so a rule
//! changes in one place and one set of table tests pins it.
//!
//! This crate must not know about meshes, entities, files, threads or GPUs: callers
//! translate their own state into the arguments here.
//!
//! - [`distance`]: levels ordered near to far, matched by `distance * scale <=
//!   max_distance * bias` with the field-of-view scale of docs/design/visibility-pass.md#lod-inside-the-cull and the
//!   finer-only hysteresis of docs/design/entity-lod.md#hysteresis ([`LodLevels`], [`LodSelector`]).
//! - [`screen_size`]: the switch distance by share (docs/design/entity-lod.md#choosing-a-level-by-screen-size) of the screen, with the
//!   stereo reach rule ([`Reach`]).
//! - [`residency`]: the resident fallback order ([`resolve_resident`]).
//! - [`throttle`]: the full-pass throttle ([`LodThrottle`]).
//! - [`scene_root`]: the camera in scene-root space ([`effective_camera_position`]).
//! - [`banded`]: symmetric hysteresis around a current level (terrain render levels)
//!   and the tile rule with a hysteresis factor ([`select_tile_level`]).
//! - [`sse`]: screen-space error in pixels ([`screen_space_error_px`]).
//! - [`building`]: baked-building arithmetic (docs/design/baked-buildings.md): coarsened segment counts,
//!   band ends rounded to half a metre, the handover push and the cell of a point
//!   ([`scaled_segments`], [`round_band_end`], [`handover_push`], [`cell_of`]).

pub mod banded;
pub mod building;
pub mod distance;
pub mod residency;
pub mod scene_root;
pub mod screen_size;
pub mod sse;
pub mod throttle;

pub use banded::{select_banded, select_tile_level, DEFAULT_TILE_HYSTERESIS_FACTOR};
pub use building::{
    cell_of, handover_push, round_band_end, scaled_segments, BAND_STEP, MIN_SEGMENTS,
};
pub use distance::{
    fov_scale, walk_levels, walk_levels_by, Hysteresis, LevelSpec, LodError, LodLevels,
    LodSelector, LodSettings, REFERENCE_P11,
};
pub use residency::{resolve_resident, Resolved};
pub use scene_root::effective_camera_position;
pub use screen_size::{screen_size_switch_distance, Reach};
pub use sse::{pixels_per_unit, screen_space_error_px, ProjectionInfo};
pub use throttle::LodThrottle;
