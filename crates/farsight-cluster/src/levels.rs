//! Per-model residency levels: fit, keep and wanted (docs/design/region-streaming-and-cluster-lod.md#which-levels-a-model-needs).
//!
//! Levels are numbered 0 (finest) to `n - 1` (coarsest). Each level of a cooked
//! mesh records its largest parent error; once that error, seen from the camera,
//! covers under the threshold, the level and every finer one are not needed. So:
//!
//! - `fit`: the finest level still needed, i.e. the first level whose largest parent
//!   error projects over the threshold (`n - 1` when none does: the coarsest level
//!   is always needed).
//! - `keep`: the same test with the error magnified by [`KEEP_MARGIN`] (30%), so
//!   `keep <= fit`: a level stays resident a little after it stops being needed and
//!   a camera moving back and forth does not reload it.
//! - `wanted`: `fit + bias`, clamped to `n - 1`. The global bias rises under
//!   streaming pressure; it changes what is loaded, never what is kept.
//!
//! For several instances of one model take the finest answer of each
//! ([`ModelLevels::finest`]). A model cooked without errors uses
//! [`LevelMetric::Distances`]: hand-over distances (docs/design/visibility-pass.md#lod-inside-the-cull).
//!
//! ```
//! use farsight_cluster::{model_levels, InstanceBounds, LevelMetric, LevelView};
//! use farsight_lod::ProjectionInfo;
//! use glam::Vec3;
//!
//! let errors = [0.001, 0.004, 0.016, f32::MAX]; // per level, finest first
//! let view = LevelView {
//!     camera: Vec3::ZERO,
//!     projection: ProjectionInfo::perspective(60f32.to_radians()),
//!     viewport_height: 1080.0,
//!     threshold_px: 1.0,
//!     bias: 0,
//! };
//! let near = InstanceBounds { center: Vec3::new(0.0, 0.0, -2.0), radius: 1.0, scale: 1.0 };
//! let far = InstanceBounds { center: Vec3::new(0.0, 0.0, -200.0), radius: 1.0, scale: 1.0 };
//! let a = model_levels(LevelMetric::ParentErrors(&errors), &near, &view);
//! let b = model_levels(LevelMetric::ParentErrors(&errors), &far, &view);
//! assert!(a.fit < b.fit);
//! assert!(a.keep <= a.fit && a.fit <= a.wanted);
//! assert_eq!(a.finest(b), a); // the nearer instance decides
//! ```

use farsight_format::{ClusterGeometry, ClusterMeshManifest};
use farsight_lod::{pixels_per_unit, ProjectionInfo, REFERENCE_P11};
use glam::{Mat4, Vec3};

/// The keep margin (docs/design/region-streaming-and-cluster-lod.md#which-levels-a-model-needs): levels are kept while their error, 30% larger, would
/// still be visible.
pub const KEEP_MARGIN: f32 = 1.3;

/// The three levels of one model (0 finest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModelLevels {
    /// Finest level the GPU might draw now.
    pub fit: u32,
    /// Finest level to keep resident (`<= fit`).
    pub keep: u32,
    /// Finest level to load (`>= fit`).
    pub wanted: u32,
}

impl ModelLevels {
    /// The finest of two answers, component-wise (several instances of one model).
    #[inline]
    pub fn finest(self, other: ModelLevels) -> ModelLevels {
        ModelLevels {
            fit: self.fit.min(other.fit),
            keep: self.keep.min(other.keep),
            wanted: self.wanted.min(other.wanted),
        }
    }
}

/// How a model's levels are measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LevelMetric<'a> {
    /// Largest parent error of each level in model units, finest first
    /// (`ClusterLevelEntry::max_parent_error` of the manifest). Must be
    /// non-decreasing; the coarsest is typically `f32::MAX`.
    ParentErrors(&'a [f32]),
    /// Fallback for models cooked without errors: each level's furthest distance at
    /// the reference 60-degree field of view and scale 1, finest first, increasing
    /// (docs/design/visibility-pass.md#lod-inside-the-cull).
    Distances(&'a [f32]),
}

impl LevelMetric<'_> {
    /// The number of levels measured.
    pub fn len(&self) -> usize {
        match self {
            LevelMetric::ParentErrors(e) => e.len(),
            LevelMetric::Distances(d) => d.len(),
        }
    }

    /// True for a model with no levels.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One placed instance: its bounding sphere in world space and its scale. For a
/// cooked cluster model build it with [`InstanceBounds::placed`], which measures from
/// the file's error bounds (the sphere around the mesh alone is too small).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstanceBounds {
    /// World-space centre of the sphere.
    pub center: Vec3,
    /// World-space radius (already scaled).
    pub radius: f32,
    /// Model-to-world scale (largest axis).
    pub scale: f32,
}

impl InstanceBounds {
    /// The bounds to measure a placed cluster model from: the file's error bounds
    /// (a sphere around every error sphere its cut measures clusters from) carried
    /// by `model_to_world`, so `fit` never names a level coarser than the cut draws.
    /// A file written before error bounds existed falls back to the sphere around
    /// its box, from which `fit` can be one level coarser than the cut.
    /// Geometry 0 of a file of several ([`InstanceBounds::placed_geometry`]).
    pub fn placed(manifest: &ClusterMeshManifest, model_to_world: &Mat4) -> InstanceBounds {
        let g = manifest.geometry(0).expect("every manifest has geometry 0");
        Self::placed_geometry(&g, model_to_world)
    }

    /// [`InstanceBounds::placed`] for one geometry of a cluster file.
    pub fn placed_geometry(
        geometry: &ClusterGeometry<'_>,
        model_to_world: &Mat4,
    ) -> InstanceBounds {
        let [x, y, z, r] = geometry.error_bounds.unwrap_or_else(|| {
            let lo = Vec3::from(geometry.bounds_min);
            let hi = Vec3::from(geometry.bounds_max);
            let c = (lo + hi) * 0.5;
            [c.x, c.y, c.z, (hi - lo).length() * 0.5]
        });
        let scale = model_to_world
            .x_axis
            .truncate()
            .length()
            .max(model_to_world.y_axis.truncate().length())
            .max(model_to_world.z_axis.truncate().length());
        InstanceBounds {
            center: model_to_world.transform_point3(Vec3::new(x, y, z)),
            radius: r * scale,
            scale,
        }
    }
}

/// The camera and global knobs, shared by every model in a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelView {
    /// World-space camera position.
    pub camera: Vec3,
    /// The camera's projection, as far as error projection needs it.
    pub projection: ProjectionInfo,
    /// Viewport height in pixels.
    pub viewport_height: f32,
    /// Error threshold in pixels (1.0).
    pub threshold_px: f32,
    /// Global streaming bias (0..=4, docs/design/region-streaming-and-cluster-lod.md#streaming-under-a-budget): levels coarser than fit to load.
    pub bias: u32,
}

/// `fit`, `keep` and `wanted` for one instance. A model with no levels gets all
/// zeros. Never allocates.
pub fn model_levels(
    metric: LevelMetric<'_>,
    instance: &InstanceBounds,
    view: &LevelView,
) -> ModelLevels {
    let n = metric.len() as u32;
    if n == 0 {
        return ModelLevels {
            fit: 0,
            keep: 0,
            wanted: 0,
        };
    }
    let last = n - 1;
    let distance = (instance.center.distance(view.camera) - instance.radius).max(0.0);
    let (fit, keep) = match metric {
        LevelMetric::ParentErrors(errors) => {
            let ppu =
                pixels_per_unit(distance, view.projection, view.viewport_height) * instance.scale;
            // Errors are non-decreasing, so "needed" is monotone: count the levels
            // that are not needed (error under the threshold).
            let needed = |e: f32, margin: f32| e * margin * ppu > view.threshold_px;
            let fit = errors
                .iter()
                .position(|&e| needed(e, 1.0))
                .map_or(last, |i| i as u32);
            let keep = errors
                .iter()
                .position(|&e| needed(e, KEEP_MARGIN))
                .map_or(last, |i| i as u32);
            (fit, keep.min(fit))
        }
        LevelMetric::Distances(max_distances) => {
            // docs/design/visibility-pass.md#lod-inside-the-cull: level i draws while distance * fov_scale / instance_scale <=
            // max_distance[i]; keep holds each level 30% further out.
            let fov_scale = if view.projection.orthographic || view.projection.p11 <= 0.0 {
                1.0
            } else {
                REFERENCE_P11 / view.projection.p11
            };
            let adjusted = distance * fov_scale / instance.scale.max(f32::MIN_POSITIVE);
            let fit = max_distances
                .iter()
                .position(|&d| adjusted <= d)
                .map_or(last, |i| i as u32);
            let keep = max_distances
                .iter()
                .position(|&d| adjusted <= d * KEEP_MARGIN)
                .map_or(last, |i| i as u32);
            (fit, keep.min(fit))
        }
    };
    ModelLevels {
        fit,
        keep,
        wanted: (fit + view.bias).min(last),
    }
}

/// The levels of a model over all its instances: the finest answer of each.
pub fn model_levels_over<'a>(
    metric: LevelMetric<'_>,
    instances: impl IntoIterator<Item = &'a InstanceBounds>,
    view: &LevelView,
) -> Option<ModelLevels> {
    instances
        .into_iter()
        .map(|i| model_levels(metric, i, view))
        .reduce(ModelLevels::finest)
}
