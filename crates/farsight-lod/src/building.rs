//! Level-of-detail arithmetic for baked buildings (docs/design/baked-buildings.md): how many segments a
//! coarsened cylinder keeps, how a draw band's end is rounded, and how far a band that
//! hands over to a piece drawn about another origin is pushed out.
//!
//! The building crate applies these to recipes and pieces; nothing here knows either.

/// The fewest segments a coarsened cylinder or revolve keeps (docs/design/baked-buildings.md#levels-are-simpler-recipes).
pub const MIN_SEGMENTS: u32 = 8;

/// The step draw-band ends are rounded up to, in metres. Bevy keeps one GPU slot per
/// distinct `VisibilityRange` for the life of the app, so ends are few and shared.
pub const BAND_STEP: f32 = 0.5;

/// Segments a cylinder or revolve authored with `authored` segments keeps under
/// `segment_scale`: `round(authored * scale)`, never fewer than [`MIN_SEGMENTS`] and
/// never more than authored (so an element authored under eight keeps its count).
/// A non-finite or negative scale keeps the authored count (policies are checked
/// before they get here; this only refuses to invent segments).
pub fn scaled_segments(authored: u32, segment_scale: f32) -> u32 {
    if !segment_scale.is_finite() || segment_scale < 0.0 {
        return authored;
    }
    let scaled = (authored as f64 * segment_scale as f64).round();
    let scaled = if scaled >= u32::MAX as f64 {
        u32::MAX
    } else {
        scaled as u32
    };
    scaled.max(MIN_SEGMENTS).min(authored)
}

/// `distance` rounded up to the next multiple of [`BAND_STEP`] (itself when it is one).
/// Infinity stays infinite; NaN stays NaN.
pub fn round_band_end(distance: f32) -> f32 {
    if !distance.is_finite() {
        return distance;
    }
    (distance / BAND_STEP).ceil() * BAND_STEP
}

/// The push of the handover rule (docs/design/baked-buildings.md#the-handover-push): the distance from `origin` (the origin a
/// piece is drawn about) to the farthest of `next` (the origins of the pieces that draw
/// the same placed elements at the next level). By the triangle inequality, a band
/// whose end is pushed out by this much is never left before every one of those
/// pieces' bands is entered. Zero when `next` is empty or every origin is `origin`.
pub fn handover_push(origin: [f32; 3], next: impl IntoIterator<Item = [f32; 3]>) -> f32 {
    next.into_iter()
        .map(|p| {
            let d = [p[0] - origin[0], p[1] - origin[1], p[2] - origin[2]];
            // f64 so the push is never rounded below the true distance.
            let len =
                ((d[0] as f64).powi(2) + (d[1] as f64).powi(2) + (d[2] as f64).powi(2)).sqrt();
            // Round up to the next f32 so the push is never shorter than the distance.
            let f = len as f32;
            if (f as f64) < len {
                f32::from_bits(f.to_bits() + 1) // f >= 0: the next f32 up
            } else {
                f
            }
        })
        .fold(0.0, f32::max)
}

/// The cell of a concatenated level (docs/design/baked-buildings.md#concatenated-levels) a point falls in, on a square grid of
/// `side` metres from the building origin in the XZ plane: `(floor(x / side),
/// floor(z / side))`. `side` must be positive and finite (checked by the policy).
pub fn cell_of(x: f32, z: f32, side: f32) -> (i32, i32) {
    ((x / side).floor() as i32, (z / side).floor() as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_table() {
        // (authored, scale, kept)
        let table = [
            (32, 1.0, 32),
            (32, 0.5, 16),
            (32, 0.25, 8),
            (32, 0.1, 8),
            (24, 0.25, 8),
            (48, 0.25, 12),
            (6, 0.5, 6), // authored under eight: never more than authored
            (8, 0.01, 8),
            (20, 0.5, 10),
            (21, 0.5, 11), // 10.5 rounds away from zero
            (16, 2.0, 16), // never above authored
            (16, f32::NAN, 16),
            (16, -1.0, 16),
            (u32::MAX, 1.0, u32::MAX),
        ];
        for (authored, scale, kept) in table {
            assert_eq!(
                scaled_segments(authored, scale),
                kept,
                "{authored} x {scale}"
            );
        }
    }

    #[test]
    fn band_end_table() {
        let table = [
            (0.0, 0.0),
            (60.0, 60.0),
            (60.01, 60.5),
            (60.5, 60.5),
            (60.51, 61.0),
            (0.2, 0.5),
            (-0.2, 0.0),
            (f32::INFINITY, f32::INFINITY),
        ];
        for (d, rounded) in table {
            assert_eq!(round_band_end(d), rounded, "{d}");
        }
        assert!(round_band_end(f32::NAN).is_nan());
    }

    #[test]
    fn push_is_the_farthest_origin() {
        assert_eq!(handover_push([1.0, 2.0, 3.0], []), 0.0);
        assert_eq!(handover_push([1.0, 2.0, 3.0], [[1.0, 2.0, 3.0]]), 0.0);
        assert_eq!(
            handover_push([0.0; 3], [[3.0, 0.0, 4.0], [1.0, 0.0, 0.0]]),
            5.0
        );
        // Never shorter than the true distance.
        let o = [0.1, 0.2, 0.3];
        let p = [17.3, -4.1, 9.9];
        let push = handover_push(o, [p]) as f64;
        let exact = ((17.3f32 - 0.1f32) as f64).hypot((-4.1f32 - 0.2f32) as f64);
        let exact = exact.hypot((9.9f32 - 0.3f32) as f64);
        assert!(push >= exact - 1e-6);
    }

    #[test]
    fn cells_floor_from_the_origin() {
        assert_eq!(cell_of(0.0, 0.0, 35.0), (0, 0));
        assert_eq!(cell_of(34.9, 35.0, 35.0), (0, 1));
        assert_eq!(cell_of(-0.1, -35.0, 35.0), (-1, -1));
        assert_eq!(cell_of(-35.1, 70.0, 35.0), (-2, 2));
    }
}
