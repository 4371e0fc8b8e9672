//! Distance levels: field-of-view scaled ranges (docs/design/visibility-pass.md#lod-inside-the-cull) and the
//! walk with finer-only hysteresis (docs/design/entity-lod.md#hysteresis).

use glam::Mat4;

use crate::screen_size::{screen_size_switch_distance, Reach};

/// `projection[1][1]` of the 60-degree vertical field of view that level distances are
/// authored for: `1 / tan(30 deg)`.
pub const REFERENCE_P11: f32 = 1.732_050_8;

/// `REFERENCE_P11 / p11`: a narrower field of view (larger `p11`) magnifies, so the
/// scale drops below one and each level holds further out. Orthographic and identity
/// projections keep the reference (scale 1).
#[inline]
pub fn fov_scale(projection: &Mat4) -> f32 {
    let p = farsight_geom::p11(projection);
    if farsight_geom::is_orthographic(projection) || !(p.is_finite() && p > 0.0) {
        1.0
    } else {
        REFERENCE_P11 / p
    }
}

/// Why a set of LOD levels was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LodError {
    /// The list of levels was empty.
    #[error("an LOD component needs at least one level, found none")]
    NoLevels,
    /// A level's `max_distance` is zero, negative, infinite or NaN.
    #[error("LOD level {index} has max_distance {found}, which is not a positive finite number")]
    BadDistance {
        /// The level's position in the list, 0 nearest.
        index: usize,
        /// The `max_distance` it was given.
        found: f32,
    },
    /// A level ends no further out than the level before it.
    #[error(
        "LOD levels must be ordered near to far: level {index} ends at {found}, \
         not beyond level {} at {previous}", index - 1
    )]
    NotOrdered {
        /// The level's position in the list, 0 nearest.
        index: usize,
        /// The `max_distance` of level `index - 1`.
        previous: f32,
        /// The `max_distance` of level `index`, which must exceed `previous`.
        found: f32,
    },
    /// A level's screen share is outside `(0, 1]` or NaN.
    #[error("LOD level {index} has screen percentage {found}, which is not in (0, 1]")]
    BadScreenPercentage {
        /// The level's position in the list, 0 nearest.
        index: usize,
        /// The share of the viewport height it was given.
        found: f32,
    },
    /// The per-component bias is zero, negative, infinite or NaN.
    #[error("LOD bias {found} is not a positive finite number")]
    BadBias {
        /// The bias given.
        found: f32,
    },
}

/// One level as the rules see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelSpec {
    /// Furthest distance (at the reference field of view, bias 1) this level draws at.
    pub max_distance: f32,
    /// Share of the viewport height (0..=1) at which this level takes over from the
    /// previous one, for components that select by screen size.
    pub screen_percentage: Option<f32>,
}

impl LevelSpec {
    /// A level selected by distance only (no screen share), drawing out to
    /// `max_distance` world units at the reference field of view.
    pub const fn distance(max_distance: f32) -> Self {
        Self {
            max_distance,
            screen_percentage: None,
        }
    }
}

/// A validated, non-empty list of levels ordered near to far.
#[derive(Clone, Debug, PartialEq)]
pub struct LodLevels {
    levels: Vec<LevelSpec>,
    /// Select by screen size (docs/design/entity-lod.md#choosing-a-level-by-screen-size).
    pub selects_by_screen_size: bool,
    /// Overrides the radius of the sphere around the local box for screen sizes.
    pub screen_size_radius: Option<f32>,
    /// Per-component quality knob (docs/design/entity-lod.md#choosing-a-level-by-distance): ranges scale by it (2 = twice as far).
    pub bias: f32,
}

impl LodLevels {
    /// Validates ordering: every `max_distance` positive, finite and strictly larger
    /// than the previous one; screen percentages in `(0, 1]`.
    pub fn new(levels: Vec<LevelSpec>) -> Result<Self, LodError> {
        if levels.is_empty() {
            return Err(LodError::NoLevels);
        }
        for (index, l) in levels.iter().enumerate() {
            if !(l.max_distance.is_finite() && l.max_distance > 0.0) {
                return Err(LodError::BadDistance {
                    index,
                    found: l.max_distance,
                });
            }
            if index > 0 && l.max_distance <= levels[index - 1].max_distance {
                let previous = levels[index - 1].max_distance;
                return Err(LodError::NotOrdered {
                    index,
                    previous,
                    found: l.max_distance,
                });
            }
            if let Some(p) = l.screen_percentage {
                if !(p.is_finite() && p > 0.0 && p <= 1.0) {
                    return Err(LodError::BadScreenPercentage { index, found: p });
                }
            }
        }
        Ok(Self {
            levels,
            selects_by_screen_size: false,
            screen_size_radius: None,
            bias: 1.0,
        })
    }

    /// Levels from plain distances, e.g. `[50.0, 100.0, 200.0]`.
    pub fn from_distances(distances: &[f32]) -> Result<Self, LodError> {
        Self::new(distances.iter().map(|&d| LevelSpec::distance(d)).collect())
    }

    /// The same levels with every range scaled by `bias` (2 holds each level twice as
    /// far out); refuses a bias that is not positive and finite.
    pub fn with_bias(mut self, bias: f32) -> Result<Self, LodError> {
        if !(bias.is_finite() && bias > 0.0) {
            return Err(LodError::BadBias { found: bias });
        }
        self.bias = bias;
        Ok(self)
    }

    /// The same levels selected by screen share instead of distance, with the
    /// bounding-sphere radius taken from `radius_override` when given (else from the
    /// object's local box).
    pub fn by_screen_size(mut self, radius_override: Option<f32>) -> Self {
        self.selects_by_screen_size = true;
        self.screen_size_radius = radius_override;
        self
    }

    /// The number of levels; at least 1.
    #[inline]
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// Always false: [`LodLevels::new`] refuses an empty list.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The levels, nearest first.
    #[inline]
    pub fn levels(&self) -> &[LevelSpec] {
        &self.levels
    }
}

/// The hysteresis (docs/design/entity-lod.md#hysteresis): on a transition to a finer level the switch distance is
/// tightened by `distance` units, never by more than `share` of the switch distance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hysteresis {
    /// The most a switch distance is pulled in, in world units (default 5).
    pub distance: f32,
    /// The most a switch distance is pulled in, as a fraction of it (default 0.1).
    pub share: f32,
}

impl Default for Hysteresis {
    fn default() -> Self {
        Self {
            distance: 5.0,
            share: 0.1,
        }
    }
}

impl Hysteresis {
    /// No tightening: levels switch at their plain distances both ways.
    pub const NONE: Hysteresis = Hysteresis {
        distance: 0.0,
        share: 0.0,
    };

    /// The tightened switch distance for a transition into a finer level.
    #[inline]
    pub fn tighten(&self, switch_distance: f32) -> f32 {
        switch_distance - self.distance.min(self.share * switch_distance)
    }
}

/// The global LOD settings (docs/design/entity-lod.md#the-throttle), read live by the callers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LodConfig {
    /// `adjusted = distance * lod_bias`; above 1 coarsens everything.
    pub lod_bias: f32,
    /// The margin a transition to a finer level must clear.
    pub hysteresis: Hysteresis,
    /// Full entity pass every this many frames (docs/design/entity-lod.md#the-throttle).
    pub update_frame_interval: u32,
    /// Camera movement that forces a full pass at once (docs/design/entity-lod.md#the-throttle).
    pub min_camera_displacement: f32,
    /// Cross-fade between levels; off by default (docs/design/entity-lod.md#applying-a-level).
    pub enable_fade_transitions: bool,
    /// Frames a fade lasts when enabled.
    pub fade_frames: u32,
}

impl Default for LodConfig {
    fn default() -> Self {
        Self {
            lod_bias: 1.0,
            hysteresis: Hysteresis::default(),
            update_frame_interval: 4,
            min_camera_displacement: 0.5,
            enable_fade_transitions: false,
            fade_frames: 8,
        }
    }
}

/// Walks levels near to far: the first level whose switch distance (tightened by
/// the hysteresis when that level is finer than `current`) holds `adjusted`; past the
/// last switch the last level keeps drawing. `switch(i)` is level `i`'s switch
/// distance; the last level's is never read.
#[inline]
pub fn walk_levels(
    adjusted: f32,
    count: usize,
    current: Option<usize>,
    hysteresis: Hysteresis,
    switch: impl FnMut(usize) -> f32,
) -> usize {
    walk_levels_by(count, current, hysteresis, switch, |t| adjusted <= t)
}

/// The walk itself, with the comparison of the (tightened) switch distance left to
/// `holds`: [`walk_levels`] compares distances, [`LodSelector::select_stored_sq`]
/// squared distances. One walk, so both forms take the same decisions.
#[inline]
pub fn walk_levels_by(
    count: usize,
    current: Option<usize>,
    hysteresis: Hysteresis,
    mut switch: impl FnMut(usize) -> f32,
    holds: impl Fn(f32) -> bool,
) -> usize {
    debug_assert!(count > 0);
    let last = count - 1;
    for i in 0..last {
        let mut t = switch(i);
        if current.is_some_and(|c| i < c) {
            t = hysteresis.tighten(t);
        }
        if holds(t) {
            return i;
        }
    }
    last
}

/// Everything a pass needs to select levels, computed once per pass from the
/// projection and the live settings: the field-of-view scale, the screen-size reach,
/// the global bias and the hysteresis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LodSelector {
    /// `REFERENCE_P11 / p11` ([`fov_scale`]).
    pub fov_scale: f32,
    /// `1 / fov_scale`, so stored ranges scale by a multiplication.
    pub inv_fov_scale: f32,
    /// The screen-size reach of the pass's view (or views, for stereo).
    pub reach: Reach,
    /// [`LodConfig::lod_bias`] as the pass began.
    pub lod_bias: f32,
    /// [`LodConfig::hysteresis`] as the pass began.
    pub hysteresis: Hysteresis,
}

impl LodSelector {
    /// The selector for one pass: the field-of-view scale from `projection`, the
    /// given screen-size `reach`, and the bias and hysteresis from `settings`.
    pub fn new(projection: &Mat4, reach: Reach, settings: &LodConfig) -> Self {
        let fov_scale = fov_scale(projection);
        Self {
            fov_scale,
            inv_fov_scale: 1.0 / fov_scale,
            reach,
            lod_bias: settings.lod_bias,
            hysteresis: settings.hysteresis,
        }
    }

    /// The reference view: 60-degree field of view, no screen-size reach, bias 1.
    pub fn reference() -> Self {
        Self {
            fov_scale: 1.0,
            inv_fov_scale: 1.0,
            reach: Reach::None,
            lod_bias: 1.0,
            hysteresis: Hysteresis::default(),
        }
    }

    /// Distance at which level `i` hands over to level `i + 1`, in the units of the
    /// adjusted distance: the screen-size switch (docs/design/entity-lod.md#choosing-a-level-by-screen-size) when the component selects by
    /// screen size, the view has a reach and the next level has a screen percentage;
    /// else the stored distance, scaled by the component's bias and the field of view.
    #[inline]
    pub fn switch_distance(&self, levels: &LodLevels, i: usize, world_radius: f32) -> f32 {
        let specs = levels.levels();
        if levels.selects_by_screen_size {
            if let (Some(reach), Some(next)) = (self.reach.value(), specs.get(i + 1)) {
                if let Some(pct) = next.screen_percentage {
                    return screen_size_switch_distance(world_radius, reach, pct) * levels.bias;
                }
            }
        }
        self.stored_switch(specs[i].max_distance * levels.bias)
    }

    /// A stored range (`max_distance * bias`) as a switch distance in this view:
    /// scaled by the field of view (docs/design/visibility-pass.md#lod-inside-the-cull).
    #[inline]
    pub fn stored_switch(&self, max_distance_times_bias: f32) -> f32 {
        max_distance_times_bias * self.inv_fov_scale
    }

    /// [`LodSelector::select_stored`] from the squared distance, so a per-object caller
    /// needs no square root: `(distance * lod_bias)^2 <= switch^2` (switch distances
    /// are never negative).
    #[inline]
    pub fn select_stored_sq(
        &self,
        ranges: &[f32],
        distance_sq: f32,
        current: Option<usize>,
    ) -> usize {
        let adjusted_sq = distance_sq * (self.lod_bias * self.lod_bias);
        walk_levels_by(
            ranges.len(),
            current,
            self.hysteresis,
            |i| self.stored_switch(ranges[i]),
            |t| adjusted_sq <= t * t,
        )
    }

    /// [`LodSelector::select`] for a component that selects by stored distance only,
    /// given its ranges already multiplied by its bias (`max_distance * bias` per
    /// level). The same walk and the same switch distances, without a [`LodLevels`]:
    /// for callers that keep ranges in a compact hot array.
    #[inline]
    pub fn select_stored(&self, ranges: &[f32], distance: f32, current: Option<usize>) -> usize {
        let adjusted = distance * self.lod_bias;
        walk_levels(adjusted, ranges.len(), current, self.hysteresis, |i| {
            self.stored_switch(ranges[i])
        })
    }

    /// The desired level for an object `distance` from the camera whose screen-size
    /// radius in world units is `world_radius` (only read for screen-size components).
    #[inline]
    pub fn select(
        &self,
        levels: &LodLevels,
        distance: f32,
        world_radius: f32,
        current: Option<usize>,
    ) -> usize {
        let adjusted = distance * self.lod_bias;
        walk_levels(adjusted, levels.len(), current, self.hysteresis, |i| {
            self.switch_distance(levels, i, world_radius)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn city() -> LodLevels {
        LodLevels::from_distances(&[50.0, 100.0, 200.0]).unwrap()
    }

    #[test]
    fn city_block_levels_walk_from_far_to_near_and_back() {
        let s = LodSelector::reference();
        let l = city();
        // (distance, desired level) with no current level: no hysteresis.
        for (d, want) in [
            (0.0, 0),
            (30.0, 0),
            (50.0, 0),
            (50.01, 1),
            (99.9, 1),
            (100.0, 1),
            (150.0, 2),
            (200.0, 2),
            (250.0, 2),
            (1e9, 2),
        ] {
            assert_eq!(s.select(&l, d, 1.0, None), want, "distance {d}");
        }
    }

    #[test]
    fn hysteresis_band_on_finer_transitions_only() {
        let s = LodSelector::reference();
        let l = city();
        // Approaching from LOD2: LOD1 only once inside 100 - 5 = 95.
        assert_eq!(s.select(&l, 99.0, 1.0, Some(2)), 2);
        assert_eq!(s.select(&l, 95.0, 1.0, Some(2)), 1);
        // LOD1 -> LOD0 only inside 50 - 5 = 45.
        assert_eq!(s.select(&l, 46.0, 1.0, Some(1)), 1);
        assert_eq!(s.select(&l, 45.0, 1.0, Some(1)), 0);
        // Receding: coarser is immediate, no band.
        assert_eq!(s.select(&l, 50.01, 1.0, Some(0)), 1);
        assert_eq!(s.select(&l, 100.01, 1.0, Some(1)), 2);
        // A jump from LOD2 straight to the near zone goes to LOD0.
        assert_eq!(s.select(&l, 10.0, 1.0, Some(2)), 0);
    }

    #[test]
    fn hysteresis_capped_at_a_tenth_of_the_switch_distance() {
        let s = LodSelector::reference();
        let l = LodLevels::from_distances(&[20.0, 30.0, 1000.0]).unwrap();
        // Band at 20 is min(5, 2) = 2: LOD1 -> LOD0 at 18, not 15.
        assert_eq!(s.select(&l, 18.5, 1.0, Some(1)), 1);
        assert_eq!(s.select(&l, 18.0, 1.0, Some(1)), 0);
        // Band at 30 is min(5, 3) = 3.
        assert_eq!(s.select(&l, 27.5, 1.0, Some(2)), 2);
        assert_eq!(s.select(&l, 27.0, 1.0, Some(2)), 1);
        // A switch at 4 units: band 0.4, so the level can still be returned to.
        let tiny = LodLevels::from_distances(&[4.0, 8.0]).unwrap();
        assert_eq!(s.select(&tiny, 3.6, 1.0, Some(1)), 0);
        assert_eq!(Hysteresis::default().tighten(4.0), 3.6);
    }

    #[test]
    fn lod_bias_scales_distance_and_fov_scales_ranges() {
        let l = city();
        let coarse = LodSelector {
            lod_bias: 2.0,
            ..LodSelector::reference()
        };
        assert_eq!(
            coarse.select(&l, 30.0, 1.0, None),
            1,
            "bias 2 treats 30 as 60"
        );
        // A 30-degree view magnifies: p11 = 1/tan(15 deg), so levels hold further out.
        let narrow = Mat4::perspective_rh(30f32.to_radians(), 1.0, 0.1, 1e4);
        let s = LodSelector::new(&narrow, Reach::None, &LodConfig::default());
        assert!(s.fov_scale < 0.5);
        assert_eq!(s.select(&l, 90.0, 1.0, None), 0, "50 / scale > 90");
        let reference = Mat4::perspective_rh(60f32.to_radians(), 1.7, 0.1, 1e4);
        assert!((fov_scale(&reference) - 1.0).abs() < 1e-5);
        let ortho = Mat4::orthographic_rh(-1.0, 1.0, -1.0, 1.0, 0.1, 10.0);
        assert_eq!(fov_scale(&ortho), 1.0);
        // Per-component bias (docs/design/entity-lod.md#choosing-a-level-by-distance): ranges scale.
        let far = city().with_bias(2.0).unwrap();
        assert_eq!(LodSelector::reference().select(&far, 90.0, 1.0, None), 0);
        // The compact form agrees with the component form everywhere.
        let ranges: Vec<f32> = far
            .levels()
            .iter()
            .map(|l| l.max_distance * far.bias)
            .collect();
        for cur in [None, Some(0), Some(1), Some(2)] {
            for d in 0..900 {
                let d = d as f32 * 0.5;
                assert_eq!(
                    s.select(&far, d, 1.0, cur),
                    s.select_stored(&ranges, d, cur)
                );
                assert_eq!(
                    coarse.select(&far, d, 1.0, cur),
                    coarse.select_stored(&ranges, d, cur)
                );
            }
        }
    }

    #[test]
    fn refuses_empty_and_unordered_levels() {
        assert_eq!(LodLevels::new(vec![]), Err(LodError::NoLevels));
        assert_eq!(
            LodLevels::from_distances(&[50.0, 40.0]),
            Err(LodError::NotOrdered {
                index: 1,
                previous: 50.0,
                found: 40.0
            })
        );
        assert_eq!(
            LodLevels::from_distances(&[50.0, 50.0]),
            Err(LodError::NotOrdered {
                index: 1,
                previous: 50.0,
                found: 50.0
            })
        );
        assert!(matches!(
            LodLevels::from_distances(&[f32::NAN]),
            Err(LodError::BadDistance { index: 0, .. })
        ));
        assert!(matches!(
            LodLevels::from_distances(&[-1.0]),
            Err(LodError::BadDistance { index: 0, .. })
        ));
        assert!(city().with_bias(f32::INFINITY).is_err());
        assert!(LodLevels::new(vec![LevelSpec {
            max_distance: 1.0,
            screen_percentage: Some(0.0)
        }])
        .is_err());
    }
}
