//! How a level of detail simplifies the recipe and how it is drawn: [`LodPolicy`],
//! and [`LodPolicy::check`], which refuses a ladder before anything is meshed.

use serde::{Deserialize, Serialize};

/// The cells a concatenated level joins its pieces in (seed 004, 2026-09-28).
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
    #[error("the ladder has no levels")]
    Empty,
    #[error("levels[{level}].cell: a cell side must be a positive finite number of metres, found {found}")]
    BadCell { level: usize, found: f32 },
    #[error(
        "levels[{level}].min_feature: must be a finite number of metres, 0 or more, found {found}"
    )]
    BadMinFeature { level: usize, found: f32 },
    #[error("levels[{level}].segment_scale: must be above 0 and at most 1, found {found}")]
    BadSegmentScale { level: usize, found: f32 },
    #[error("levels[{level}].until: must be finite and beyond the previous level's ({previous}), found {found}")]
    BadUntil {
        level: usize,
        previous: f32,
        found: f32,
    },
    #[error("levels[{level}].until: only the last level may draw to any distance")]
    UnboundedBeforeLast { level: usize },
    #[error("levels[{level}].until: the last level draws to any distance, found {found}")]
    BoundedLast { level: usize, found: f32 },
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

    /// Seed 004's default ladder: as authored to 60 m; no interior, nothing under
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
    /// level unbounded; a cell side positive and finite.
    pub fn check(levels: &[LodPolicy]) -> Result<(), PolicyError> {
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
