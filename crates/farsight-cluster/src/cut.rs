//! The per-instance cut: which clusters to draw.

use farsight_lod::{screen_space_error_px, ProjectionInfo};
use glam::Vec3;

use crate::dag::ClusterDag;

/// One instance seen from one camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CutView {
    /// Camera position in the model's own space.
    pub camera_local: Vec3,
    /// Uniform scale of the instance (model units to world units; use the largest
    /// axis scale for a non-uniform one, which is conservative).
    pub scale: f32,
    /// The camera's projection, as far as error projection needs it.
    pub projection: ProjectionInfo,
    /// Viewport height in pixels.
    pub viewport_height: f32,
    /// Largest error on screen, in pixels (docs/design/region-streaming-and-cluster-lod.md#choosing-the-cut).
    pub threshold_px: f32,
}

/// What one cut looked at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CutStats {
    /// Level and group nodes whose bound was tested.
    pub nodes_visited: u32,
    /// Clusters whose own error was tested.
    pub clusters_visited: u32,
    /// Clusters the cut chose to draw (the length of its output).
    pub clusters_drawn: u32,
}

impl CutView {
    /// Pixels an error of `error` model units covers at the nearest point of
    /// `sphere` (model space): `farsight-lod`'s rule on world units. Inside the
    /// sphere every non-zero error is infinitely large.
    #[inline]
    pub fn error_px(&self, sphere: &[f32; 4], error: f32) -> f32 {
        let d = (Vec3::new(sphere[0], sphere[1], sphere[2]).distance(self.camera_local)
            - sphere[3])
            .max(0.0);
        screen_space_error_px(
            error * self.scale,
            d * self.scale,
            self.projection,
            self.viewport_height,
        )
    }

    /// The two questions for one cluster (docs/design/region-streaming-and-cluster-lod.md#choosing-the-cut): fine enough, and the parent not.
    #[inline]
    pub fn draws(&self, own: (&[f32; 4], f32), parent: (&[f32; 4], f32)) -> bool {
        self.error_px(own.0, own.1) <= self.threshold_px
            && self.error_px(parent.0, parent.1) > self.threshold_px
    }
}

impl ClusterDag {
    /// The cut by walking levels, then groups, then clusters: a level or group whose
    /// (largest) parent error is already under the threshold holds nothing to draw.
    /// Pushes indices into [`ClusterDag::clusters`] onto `out` (cleared first) in
    /// level-major order; allocates nothing once `out` has the capacity.
    pub fn cut(&self, view: &CutView, out: &mut Vec<u32>) -> CutStats {
        out.clear();
        let mut stats = CutStats::default();
        for level in &self.levels {
            stats.nodes_visited += 1;
            if view.error_px(&level.sphere, level.max_parent_error) <= view.threshold_px {
                continue;
            }
            for group in &self.groups[level.groups.start as usize..level.groups.end as usize] {
                stats.nodes_visited += 1;
                if view.error_px(&group.sphere, group.error) <= view.threshold_px {
                    continue;
                }
                for c in group.clusters.clone() {
                    let cluster = &self.clusters[c as usize];
                    stats.clusters_visited += 1;
                    if view.error_px(&cluster.sphere, cluster.error) <= view.threshold_px {
                        out.push(c);
                    }
                }
            }
        }
        stats.clusters_drawn = out.len() as u32;
        stats
    }

    /// The brute-force reference: both questions asked of every cluster.
    pub fn cut_flat(&self, view: &CutView, out: &mut Vec<u32>) -> CutStats {
        out.clear();
        for (c, cluster) in self.clusters.iter().enumerate() {
            let g = &self.groups[cluster.group as usize];
            if view.draws((&cluster.sphere, cluster.error), (&g.sphere, g.error)) {
                out.push(c as u32);
            }
        }
        CutStats {
            nodes_visited: 0,
            clusters_visited: self.clusters.len() as u32,
            clusters_drawn: out.len() as u32,
        }
    }
}
