//! How a level of detail simplifies the recipe and how it is drawn: [`LodPolicy`],
//! and [`LodPolicy::check`], which refuses a ladder before anything is meshed.

use serde::{Deserialize, Serialize};

use crate::bands::DEFAULT_CROSSFADE;
use crate::mesh::Aabb;

/// The largest cell index, either sign, a concatenated level may compute: a multiple
/// of 128 under 2^31, so a quotient at most this rounds in f32 to at most this and
/// its floor fits an `i32`.
const MAX_CELL_INDEX: f64 = 2_147_483_392.0;

/// The cells a concatenated level joins its pieces in (docs/design/baked-buildings.md#concatenated-levels).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum LodCell {
    /// Square cells of this side (metres) in the XZ plane from the building origin.
    Side(f32),
    /// One cell for the whole building.
    Whole,
}

/// One level of a ladder.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodPolicy {
    /// Metres: an element, union member or cutter whose middle extent is under this
    /// is left out (except elements marked `far`).
    pub min_feature: f32,
    /// Share of every cylinder's and revolve's segments kept (never under eight, never
    /// above authored).
    pub segment_scale: f32,
    /// Leave out every interior element.
    pub drop_interior: bool,
    /// Where the level stops drawing (metres); `None` on the last level.
    pub until: Option<f32>,
    /// Join the level's pieces per cell, binding and side.
    #[serde(default)]
    pub cell: Option<LodCell>,
}

/// Why a ladder was refused. Every variant names the level as `levels[n]`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The ladder is empty.
    #[error("the ladder has no levels")]
    Empty,
    /// A cell side that is not a positive finite number.
    #[error("levels[{level}].cell: a cell side must be a positive finite number of metres, found {found}")]
    BadCell {
        /// The level, 0 the finest.
        level: usize,
        /// The side given, metres.
        found: f32,
    },
    /// A smallest feature that is negative or not finite.
    #[error(
        "levels[{level}].min_feature: must be a finite number of metres, 0 or more, found {found}"
    )]
    BadMinFeature {
        /// The level, 0 the finest.
        level: usize,
        /// The value given, metres.
        found: f32,
    },
    /// A segment share outside `(0, 1]`.
    #[error("levels[{level}].segment_scale: must be above 0 and at most 1, found {found}")]
    BadSegmentScale {
        /// The level, 0 the finest.
        level: usize,
        /// The share given.
        found: f32,
    },
    /// An end distance that is not finite or not beyond the previous level's.
    #[error("levels[{level}].until: must be finite and beyond the previous level's ({previous}), found {found}")]
    BadUntil {
        /// The level, 0 the finest.
        level: usize,
        /// The previous level's end, metres (0 for the first level).
        previous: f32,
        /// This level's end, metres.
        found: f32,
    },
    /// A level other than the last has no end distance.
    #[error("levels[{level}].until: only the last level may draw to any distance")]
    UnboundedBeforeLast {
        /// The level, 0 the finest.
        level: usize,
    },
    /// The last level has an end distance.
    #[error("levels[{level}].until: the last level draws to any distance, found {found}")]
    BoundedLast {
        /// The level, 0 the finest.
        level: usize,
        /// The end it was given, metres.
        found: f32,
    },
    /// A level ends before its own fade-in is over, so its band would end before it
    /// is wholly drawn (Bevy's `VisibilityRange` needs the fade-in to end no later
    /// than the fade-out starts).
    #[error("levels[{level}].until: the level fades in from {starts} m to {fades_in_until} m, so it cannot end at {found} m (end it at {fades_in_until} m or later)")]
    NarrowerThanCrossfade {
        /// The level, 0 the finest.
        level: usize,
        /// Where the level takes over: the previous level's end, metres.
        starts: f32,
        /// Where its fade-in ends, metres.
        fades_in_until: f32,
        /// Its end distance, metres.
        found: f32,
    },
    /// A cell so small that a point of the building falls in a cell whose index is
    /// past an `i32`.
    #[error("levels[{level}].cell: a side of {side} m puts the building's farthest point, {reach} m from its origin, in cell {index:.0}, past the range a cell index holds (2147483392 either way)")]
    CellIndexOutOfRange {
        /// The level, 0 the finest.
        level: usize,
        /// The cell side given, metres.
        side: f32,
        /// The distance of the building's farthest point from its origin, metres.
        reach: f32,
        /// The cell index that point would get.
        index: f64,
    },
}

impl LodPolicy {
    /// The level as authored, drawing to `until`.
    pub const fn as_authored(until: Option<f32>) -> LodPolicy {
        LodPolicy {
            min_feature: 0.0,
            segment_scale: 1.0,
            drop_interior: false,
            until,
            cell: None,
        }
    }

    /// The default ladder (docs/design/baked-buildings.md#levels-are-simpler-recipes): as authored to 60 m; no interior, nothing under
    /// 35 cm and half the segments to 250 m; nothing under 1.5 m and a quarter of the
    /// segments beyond. No level is concatenated.
    pub fn ladder() -> Vec<LodPolicy> {
        vec![
            LodPolicy::as_authored(Some(60.0)),
            LodPolicy {
                min_feature: 0.35,
                segment_scale: 0.5,
                drop_interior: true,
                until: Some(250.0),
                cell: None,
            },
            LodPolicy {
                min_feature: 1.5,
                segment_scale: 0.25,
                drop_interior: true,
                until: None,
                cell: None,
            },
        ]
    }

    /// Whether the policy changes the recipe at all.
    pub fn simplifies(&self) -> bool {
        self.min_feature > 0.0 || self.segment_scale < 1.0 || self.drop_interior
    }

    /// Whether the level is the recipe as authored, drawn as placed pieces.
    pub fn is_identity(&self) -> bool {
        !self.simplifies() && self.cell.is_none()
    }

    /// Checks a ladder: at least one level; finite, non-negative `min_feature`;
    /// `segment_scale` in (0, 1]; `until` finite and increasing with only the last
    /// level unbounded; a cell side positive and finite; and every level at least as
    /// wide as the crossfade it is entered by, at [`DEFAULT_CROSSFADE`]
    /// ([`LodPolicy::check_crossfade`]).
    pub fn check(levels: &[LodPolicy]) -> Result<(), PolicyError> {
        Self::check_crossfade(levels, DEFAULT_CROSSFADE)
    }

    /// [`LodPolicy::check`] for bands drawn with `crossfade` (the share of a boundary
    /// distance a level fades in over, as [`crate::bands()`] takes it): a level that
    /// starts at distance `s` is wholly drawn only from `s` plus its fade-in (both
    /// rounded up to half a metre, as bands are), and must not end before that.
    pub fn check_crossfade(levels: &[LodPolicy], crossfade: f32) -> Result<(), PolicyError> {
        Self::check_fields(levels)?;
        let mut previous: Option<f32> = None;
        for (level, p) in levels.iter().enumerate() {
            let Some(until) = p.until else { break };
            if let Some(starts) = previous {
                let s = farsight_lod::round_band_end(starts);
                let fades_in_until = s + farsight_lod::round_band_end(starts * crossfade);
                // The end of a band is never drawn in before `round_band_end(until)`.
                if farsight_lod::round_band_end(until) < fades_in_until {
                    return Err(PolicyError::NarrowerThanCrossfade {
                        level,
                        starts,
                        fades_in_until,
                        found: until,
                    });
                }
            }
            previous = Some(until);
        }
        Ok(())
    }

    /// Checks the cells of a ladder against the building they will join: `reach` is
    /// the box the building's meshes lie in (building space,
    /// [`crate::Building::reach`]). A side is refused where a point of that box would
    /// fall in a cell whose index leaves the `i32` range, so no cell index ever
    /// saturates into a wrong cell. `bake::bake` (feature `bake`) runs it before meshing.
    pub fn check_cells(levels: &[LodPolicy], reach: &Aabb) -> Result<(), PolicyError> {
        if reach.is_empty() {
            return Ok(());
        }
        let far = [reach.min[0], reach.max[0], reach.min[2], reach.max[2]]
            .into_iter()
            .map(f32::abs)
            .fold(0.0f32, f32::max);
        for (level, p) in levels.iter().enumerate() {
            if let Some(LodCell::Side(side)) = p.cell {
                let index = far as f64 / side as f64;
                // A side that is not a positive finite number is `BadCell`'s.
                if side > 0.0 && (index.is_nan() || index > MAX_CELL_INDEX) {
                    return Err(PolicyError::CellIndexOutOfRange {
                        level,
                        side,
                        reach: far,
                        index,
                    });
                }
            }
        }
        Ok(())
    }

    fn check_fields(levels: &[LodPolicy]) -> Result<(), PolicyError> {
        if levels.is_empty() {
            return Err(PolicyError::Empty);
        }
        let mut previous = 0.0f32;
        for (level, p) in levels.iter().enumerate() {
            if let Some(LodCell::Side(side)) = p.cell {
                if !(side.is_finite() && side > 0.0) {
                    return Err(PolicyError::BadCell { level, found: side });
                }
            }
            if !(p.min_feature.is_finite() && p.min_feature >= 0.0) {
                return Err(PolicyError::BadMinFeature {
                    level,
                    found: p.min_feature,
                });
            }
            if !(p.segment_scale > 0.0 && p.segment_scale <= 1.0) {
                return Err(PolicyError::BadSegmentScale {
                    level,
                    found: p.segment_scale,
                });
            }
            let last = level + 1 == levels.len();
            match (p.until, last) {
                (None, false) => return Err(PolicyError::UnboundedBeforeLast { level }),
                (Some(found), true) => return Err(PolicyError::BoundedLast { level, found }),
                (Some(found), false) => {
                    if !(found.is_finite() && found > previous) {
                        return Err(PolicyError::BadUntil {
                            level,
                            previous,
                            found,
                        });
                    }
                    previous = found;
                }
                (None, true) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ladder_passes() {
        LodPolicy::check(&LodPolicy::ladder()).unwrap();
        assert!(LodPolicy::ladder()[0].is_identity());
        assert!(!LodPolicy::ladder()[1].is_identity());
    }

    #[test]
    fn bad_cells_are_refused_naming_the_level() {
        for side in [0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut ladder = LodPolicy::ladder();
            ladder[2].cell = Some(LodCell::Side(side));
            let err = LodPolicy::check(&ladder).unwrap_err();
            assert!(
                matches!(err, PolicyError::BadCell { level: 2, .. }),
                "{err:?}"
            );
            assert!(err.to_string().starts_with("levels[2].cell"), "{err}");
        }
        let mut ladder = LodPolicy::ladder();
        ladder[1].cell = Some(LodCell::Whole);
        ladder[2].cell = Some(LodCell::Side(35.0));
        LodPolicy::check(&ladder).unwrap();
    }

    /// 60 m then 64 m: the second level fades in over 60-66 m, so it would stop
    /// before it is ever wholly drawn, and Bevy's range needs the fade-in to end no
    /// later than the fade-out starts.
    #[test]
    fn a_level_narrower_than_its_fade_in_is_refused_naming_it() {
        let mut l = LodPolicy::ladder();
        l.insert(1, LodPolicy::as_authored(Some(64.0)));
        let err = LodPolicy::check(&l).unwrap_err();
        assert!(
            matches!(
                err,
                PolicyError::NarrowerThanCrossfade {
                    level: 1,
                    fades_in_until: 66.0,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("levels[1].until"), "{err}");
        // Ending exactly where the fade-in does is allowed; a wider fade is not.
        l[1].until = Some(66.0);
        LodPolicy::check(&l).unwrap();
        assert!(matches!(
            LodPolicy::check_crossfade(&l, 0.2),
            Err(PolicyError::NarrowerThanCrossfade { level: 1, .. })
        ));
        for until in [60.5, 65.5, 66.0, 70.0, 200.0] {
            l[1].until = Some(until);
            assert_eq!(LodPolicy::check(&l).is_ok(), until >= 66.0, "{until}");
        }
    }

    #[test]
    fn a_cell_side_too_small_for_the_building_is_refused_naming_the_level() {
        let reach = Aabb {
            min: [-3000.0, 0.0, -5.0],
            max: [10.0, 30.0, 5.0],
        };
        let mut l = LodPolicy::ladder();
        l[2].cell = Some(LodCell::Side(1e-6));
        LodPolicy::check(&l).unwrap();
        let err = LodPolicy::check_cells(&l, &reach).unwrap_err();
        assert!(
            matches!(err, PolicyError::CellIndexOutOfRange { level: 2, .. }),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("levels[2].cell"), "{err}");
        // 3 km at 10 um is 3e8 cells: in range, and so is every index it computes.
        l[2].cell = Some(LodCell::Side(1e-5));
        LodPolicy::check_cells(&l, &reach).unwrap();
        let (i, _) = farsight_lod::cell_of(-3000.0, 5.0, 1e-5);
        assert!(i < -299_000_000 && i > i32::MIN, "{i}");
        l[2].cell = Some(LodCell::Whole);
        LodPolicy::check_cells(&l, &reach).unwrap();
        LodPolicy::check_cells(&l, &Aabb::EMPTY).unwrap();
    }

    #[test]
    fn other_refusals() {
        assert_eq!(LodPolicy::check(&[]), Err(PolicyError::Empty));
        let mut l = LodPolicy::ladder();
        l[1].until = Some(30.0);
        assert!(matches!(
            LodPolicy::check(&l),
            Err(PolicyError::BadUntil { level: 1, .. })
        ));
        let mut l = LodPolicy::ladder();
        l[0].until = None;
        assert!(matches!(
            LodPolicy::check(&l),
            Err(PolicyError::UnboundedBeforeLast { level: 0 })
        ));
        let mut l = LodPolicy::ladder();
        l[2].until = Some(900.0);
        assert!(matches!(
            LodPolicy::check(&l),
            Err(PolicyError::BoundedLast { level: 2, .. })
        ));
        let mut l = LodPolicy::ladder();
        l[1].segment_scale = 0.0;
        assert!(matches!(
            LodPolicy::check(&l),
            Err(PolicyError::BadSegmentScale { level: 1, .. })
        ));
        let mut l = LodPolicy::ladder();
        l[1].min_feature = f32::NAN;
        assert!(matches!(
            LodPolicy::check(&l),
            Err(PolicyError::BadMinFeature { level: 1, .. })
        ));
    }
}
