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
//!
//! ```
//! use farsight_lod::{LodLevels, LodSelector, LodConfig, Reach};
//! use glam::Mat4;
//!
//! // Three levels: the finest out to 50 m, the next to 100 m, the coarsest beyond.
//! let levels = LodLevels::from_distances(&[50.0, 100.0, 200.0]).unwrap();
//!
//! // At the reference 60-degree field of view, distances are used as stored.
//! let selector = LodSelector::reference();
//! assert_eq!(selector.select(&levels, 30.0, 1.0, None), 0);
//! assert_eq!(selector.select(&levels, 75.0, 1.0, None), 1);
//! assert_eq!(selector.select(&levels, 5000.0, 1.0, None), 2); // the last level never ends
//!
//! // Hysteresis: coming back from level 1, level 0 takes over only 5 m inside its 50 m.
//! assert_eq!(selector.select(&levels, 48.0, 1.0, Some(1)), 1);
//! assert_eq!(selector.select(&levels, 44.0, 1.0, Some(1)), 0);
//!
//! // A 30-degree zoom magnifies, so the finest level holds about twice as far out.
//! let zoom = Mat4::perspective_rh(30f32.to_radians(), 16.0 / 9.0, 0.1, 1000.0);
//! let zoomed = LodSelector::new(&zoom, Reach::from_projection(&zoom), &LodConfig::default());
//! assert_eq!(zoomed.select(&levels, 75.0, 1.0, None), 0);
//! ```
#![warn(missing_docs)]

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
    fov_scale, walk_levels, walk_levels_by, Hysteresis, LevelSpec, LodConfig, LodError, LodLevels,
    LodSelector, REFERENCE_P11,
};
pub use residency::{resolve_resident, Resolved};
pub use scene_root::effective_camera_position;
pub use screen_size::{screen_size_switch_distance, Reach};
pub use sse::{pixels_per_unit, screen_space_error_px, ProjectionInfo};
pub use throttle::LodThrottle;
