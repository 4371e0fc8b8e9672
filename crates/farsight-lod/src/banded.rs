//! Hysteresis around the level already in use: symmetric offsets (terrain render
//! levels, docs/design/voxel-terrain.md#render-levels-and-residency) and a multiplicative factor (tile
//! streaming, docs/design/entity-lod.md#tile-streaming).

/// The tile hysteresis factor (docs/design/entity-lod.md#tile-streaming): a 10% band on the active tile level.
pub const DEFAULT_TILE_HYSTERESIS_FACTOR: f32 = 0.90;

/// Level for `distance` given `thresholds[i]`, the boundary between level `i` and
/// `i + 1` (so `thresholds.len() + 1` levels), with a symmetric `band` that depends on
/// the current level: to move finer the distance must fall `band` inside a boundary,
/// to move coarser it must pass `band` beyond one. With no current level the plain
/// thresholds apply. Used for voxel terrain (320/720/1500 with a 48-unit band).
#[inline]
pub fn select_banded(
    current: Option<usize>,
    distance: f32,
    thresholds: &[f32],
    band: f32,
) -> usize {
    for (i, &t) in thresholds.iter().enumerate() {
        let t = match current {
            Some(c) if i < c => t - band,
            Some(_) => t + band,
            None => t,
        };
        if distance <= t {
            return i;
        }
    }
    thresholds.len()
}

/// The per-tile rule (docs/design/entity-lod.md#tile-streaming): `switch_distances[i]` is the furthest distance of level `i`
/// (finest first). A tile moves to a coarser level as soon as it passes a switch
/// distance; it moves to a finer level only once inside `switch * factor`, so the
/// active level keeps a band of `1 - factor` (10% by default) before it is dropped
/// for a finer one. Past the last switch the last level stays.
#[inline]
pub fn select_tile_level(
    current: Option<usize>,
    distance: f32,
    switch_distances: &[f32],
    hysteresis_factor: f32,
) -> usize {
    debug_assert!(!switch_distances.is_empty());
    let last = switch_distances.len() - 1;
    for (i, &s) in switch_distances[..last].iter().enumerate() {
        let t = if current.is_some_and(|c| i < c) {
            s * hysteresis_factor
        } else {
            s
        };
        if distance <= t {
            return i;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terrain_levels_with_a_48_unit_band() {
        let t = [320.0, 720.0, 1500.0];
        assert_eq!(select_banded(None, 300.0, &t, 48.0), 0);
        assert_eq!(select_banded(None, 321.0, &t, 48.0), 1);
        assert_eq!(select_banded(None, 2000.0, &t, 48.0), 3);
        // At level 0, coarsening waits until 320 + 48.
        assert_eq!(select_banded(Some(0), 360.0, &t, 48.0), 0);
        assert_eq!(select_banded(Some(0), 369.0, &t, 48.0), 1);
        // At level 1, refining waits until 320 - 48.
        assert_eq!(select_banded(Some(1), 280.0, &t, 48.0), 1);
        assert_eq!(select_banded(Some(1), 272.0, &t, 48.0), 0);
        assert_eq!(select_banded(Some(1), 760.0, &t, 48.0), 1);
        assert_eq!(select_banded(Some(1), 770.0, &t, 48.0), 2);
        // Level 3 back to level 2 inside 1500 - 48.
        assert_eq!(select_banded(Some(3), 1460.0, &t, 48.0), 3);
        assert_eq!(select_banded(Some(3), 1450.0, &t, 48.0), 2);
    }

    #[test]
    fn tile_band_is_ten_percent_of_the_switch() {
        let s = [100.0, 300.0, 1000.0];
        assert_eq!(select_tile_level(None, 95.0, &s, 0.9), 0);
        assert_eq!(
            select_tile_level(Some(1), 95.0, &s, 0.9),
            1,
            "needs 90 to refine"
        );
        assert_eq!(select_tile_level(Some(1), 90.0, &s, 0.9), 0);
        assert_eq!(
            select_tile_level(Some(0), 100.5, &s, 0.9),
            1,
            "coarsening is immediate"
        );
        assert_eq!(select_tile_level(Some(2), 280.0, &s, 0.9), 2);
        assert_eq!(select_tile_level(Some(2), 270.0, &s, 0.9), 1);
        assert_eq!(select_tile_level(Some(0), 5000.0, &s, 0.9), 2);
    }
}
