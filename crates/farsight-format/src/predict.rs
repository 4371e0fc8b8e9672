//! Geometric normal prediction for cooked records (the parallelogram walk is
//! `walk.rs`).
//!
//! A vertex normal is predicted from the mesh itself: the sum of the cross products of
//! its triangles' edges, taken on the quantised integer positions. The sums are f32,
//! added in triangle order with the triangle's corners as stored, and every step is
//! one IEEE operation (no fused multiply-add, no reassociation, no approximate
//! reciprocal), so the encoder and any decoder get the same prediction bit for bit.
//! f32 rather than exact integer sums because the decoder's per-vertex code then runs
//! four vertices to an SSE register (the prediction only has to be close, not exact:
//! its error costs bytes, never precision). The stream stores the wrapping
//! difference between the octahedral code and the predicted code, which is small
//! wherever the authored normal is close to the surface's own, and the coder takes
//! small numbers for little. Hard edges predict well too: a split vertex only sums
//! the faces on its side.

use crate::coding::unzigzag;
#[cfg(feature = "encode")]
use crate::coding::zigzag;

/// Predicted octahedral codes of `bits` bits, one per vertex, into `out` (cleared).
/// `sums` is scratch. Every index must be below `positions.len()`.
#[cfg(feature = "encode")]
pub(crate) fn predict_normals(
    positions: &[[u16; 4]],
    indices: &[u32],
    bits: u32,
    sums: &mut Vec<[f32; 4]>,
    out: &mut Vec<[i16; 2]>,
) {
    normal_sums(positions, indices, sums);
    let scale = oct_code_scale(bits);
    out.clear();
    out.extend(sums.iter().map(|&s| predicted_code(s, scale)));
}

/// Per vertex, the sum of the (unnormalised) face normals of its triangles, into
/// `sums` (resized to `positions.len()`; lane 3 is zero). Every index must be below
/// `positions.len()`.
pub(crate) fn normal_sums(positions: &[[u16; 4]], indices: &[u32], sums: &mut Vec<[f32; 4]>) {
    sums.clear();
    sums.resize(positions.len(), [0.0; 4]);
    for t in indices.chunks_exact(3) {
        let (ia, ib, ic) = (t[0] as usize, t[1] as usize, t[2] as usize);
        let f = face_normal(positions[ia], positions[ib], positions[ic]);
        add_face(sums, [ia, ib, ic], f);
    }
}

/// The cross product `(b - a) x (c - a)` of quantised positions, in f32 (the edges
/// are exact; each product and difference rounds once, the same way everywhere).
/// Written as four-lane operations (lane 3 is `w1 * w2 - w1 * w2` = +0.0).
#[cfg(not(simd_x86))]
#[inline(always)]
pub(crate) fn face_normal(a: [u16; 4], b: [u16; 4], c: [u16; 4]) -> [f32; 4] {
    face_normal_portable(a, b, c)
}

/// The portable [`face_normal`] (also the reference its SSE2 form is tested against).
#[cfg(any(test, not(simd_x86)))]
#[inline(always)]
pub(crate) fn face_normal_portable(a: [u16; 4], b: [u16; 4], c: [u16; 4]) -> [f32; 4] {
    let (a, b, c) = (a.map(f32::from), b.map(f32::from), c.map(f32::from));
    let e1: [f32; 4] = std::array::from_fn(|i| b[i] - a[i]);
    let e2: [f32; 4] = std::array::from_fn(|i| c[i] - a[i]);
    let yzx = |v: [f32; 4]| [v[1], v[2], v[0], v[3]];
    let zxy = |v: [f32; 4]| [v[2], v[0], v[1], v[3]];
    let (l1, l2, r1, r2) = (yzx(e1), zxy(e2), zxy(e1), yzx(e2));
    std::array::from_fn(|i| l1[i] * l2[i] - r1[i] * r2[i])
}

/// Adds face normal `f` to its three corners' sums, in corner order.
#[cfg(not(simd_x86))]
#[inline(always)]
pub(crate) fn add_face(sums: &mut [[f32; 4]], corners: [usize; 3], f: [f32; 4]) {
    for i in corners {
        let s = &mut sums[i];
        *s = std::array::from_fn(|k| s[k] + f[k]);
    }
}

/// [`face_normal`] in SSE2 (`simd.rs`): the same bits.
#[cfg(simd_x86)]
pub(crate) use crate::simd::face_normal;

/// Adds face normal `f` to its three corners' sums, in corner order.
#[cfg(simd_x86)]
#[inline(always)]
pub(crate) fn add_face(sums: &mut [[f32; 4]], corners: [usize; 3], f: [f32; 4]) {
    for i in corners {
        sums[i] = crate::simd::add4(sums[i], f);
    }
}

/// The largest code of a `bits`-bit octahedral component, as the prediction scales.
#[inline]
pub(crate) fn oct_code_scale(bits: u32) -> f32 {
    ((1i32 << (bits - 1)) - 1) as f32
}

/// `x.round()` (half away from zero) for finite `|x| < 2^22` (the codes are at most
/// 32767), without the libm call that `f32::round` is on baseline x86-64, without a
/// branch (the fraction's side of one half is a coin toss per vertex, so a branch
/// mispredicts half the time), and without `as i32`, whose saturation LLVM does not
/// vectorise (it made the AVX2 tier convert the codes lane by lane, 2.5 % of
/// ToyCar's decode instructions). Adding `1.5 * 2^23` rounds `x` to the nearest
/// integer, ties to even, exactly, and leaves that integer in the low mantissa bits;
/// a tie rounded towards zero is then moved one away. The same value as the
/// truncate-and-compare form it replaced for every f32 below 2^22 (checked
/// exhaustively, both signs), so encoder and decoder predictions are unchanged.
#[inline(always)]
fn round_half_away(x: f32) -> i32 {
    const M: f32 = 12_582_912.0;
    let big = x + M;
    let nearest = big - M;
    let d = x - nearest;
    let i = big.to_bits() as i32 - M.to_bits() as i32;
    i + i32::from(d >= 0.5 && x > 0.0) - i32::from(d <= -0.5 && x < 0.0)
}

/// The octahedral code predicted for a vertex from its face-normal sum (`[0, 0]` for a
/// zero sum). Encoder and decoder both call this, so they agree bit for bit. Written
/// without data-dependent branches (a zero sum divides by one instead, giving the
/// same `[0, 0]`; the fold for the lower hemisphere is a select), so a loop over
/// vertices vectorises.
#[inline(always)]
pub(crate) fn predicted_code(s: [f32; 4], scale: f32) -> [i16; 2] {
    let l1 = s[0].abs() + s[1].abs() + s[2].abs();
    let d = if l1 == 0.0 { 1.0 } else { l1 };
    let (x, y) = (s[0] / d, s[1] / d);
    // The fold's sign-not-zero: `x` is -0.0 only for a -0.0 sum component, which is
    // still "not negative" here (`x < 0.0` is false), as it is for +0.0.
    let sx = if x < 0.0 { -1.0 } else { 1.0 };
    let sy = if y < 0.0 { -1.0 } else { 1.0 };
    let (fx, fy) = ((1.0 - y.abs()) * sx, (1.0 - x.abs()) * sy);
    let below = s[2] < 0.0;
    let (x, y) = (if below { fx } else { x }, if below { fy } else { y });
    [
        round_half_away(x * scale) as i16,
        round_half_away(y * scale) as i16,
    ]
}

/// Uvs predicted from positions ([`crate::CookedHeader::uv_axes`]): per uv component
/// the position axis its code follows, the fixed-point cells of uv per position
/// cell, and whether it runs the other way. A terrain tile or a planar-mapped wall
/// has uvs that are an axis-aligned affine map of its positions; the map is the one
/// that takes the record's position bounds on that axis to its uv bounds, so the
/// header's bounds already hold it and the file stores three bits per component.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct UvFromPositions {
    /// Per component: the axis (0..3), or `None` where it is not predicted.
    axis: [Option<usize>; 2],
    /// Per component: uv cells per position cell, times 2^32.
    scale: [u64; 2],
    /// Per component: the uv runs from its maximum as the position grows.
    reversed: [bool; 2],
    /// The uv cells, `2^uv_bits`.
    cells: u32,
}

/// Largest [`UvFromPositions::scale`]: `(2 * code + 1) * scale` stays below 2^64
/// for every 16-bit code.
const MAX_UV_SCALE: f64 = (1u64 << 47) as f64;

impl UvFromPositions {
    /// The prediction a header describes (`uv_axes`: per component three bits, the
    /// axis plus one, 0 for none, then the reversal; u in bits 0-2, v in 3-5).
    /// Computed once per record in f64 from the header's f32 bounds, every step one
    /// IEEE operation, so encoder and decoder get the same integers.
    pub(crate) fn new(
        uv_axes: u8,
        bounds_min: [f32; 3],
        bounds_max: [f32; 3],
        position_bits: u32,
        uv_bits: u32,
    ) -> Self {
        // A position code's cell is `extent / 2^position_bits` wide on every axis
        // (`max_extent`); a uv code's `uv extent / 2^uv_bits`. Along an axis of
        // extent `e` mapped onto the uv extent, one position cell is
        // `extent * 2^uv_bits / (2^position_bits * e)` uv cells.
        let extent = crate::max_extent(bounds_min, bounds_max) as f64;
        let cells = 1u32 << uv_bits;
        let ratio = extent * cells as f64 / (1u32 << position_bits) as f64;
        let mut out = Self {
            axis: [None; 2],
            scale: [0; 2],
            reversed: [false; 2],
            cells,
        };
        for c in 0..2 {
            let bits = uv_axes >> (3 * c);
            let axis = (bits & 3) as usize;
            if axis == 0 {
                continue;
            }
            let e = bounds_max[axis - 1] as f64 - bounds_min[axis - 1] as f64;
            let k = if e > 0.0 { ratio / e } else { 0.0 };
            out.axis[c] = Some(axis - 1);
            // `as` saturates (and takes NaN to 0): the same integer everywhere.
            out.scale[c] = (k * 4_294_967_296.0).min(MAX_UV_SCALE) as u64;
            out.reversed[c] = bits & 4 != 0;
        }
        out
    }

    /// The uv code predicted for a vertex at position code `p` (wrapping 16 bits):
    /// the uv cell holding its position cell's centre, mapped along the axis.
    #[inline(always)]
    pub(crate) fn predict(&self, p: [u16; 4]) -> [u16; 2] {
        std::array::from_fn(|c| match self.axis[c] {
            None => 0,
            Some(a) => {
                let t = ((2 * p[a] as u64 + 1) * self.scale[c]) >> 33;
                let t = t as u32;
                if self.reversed[c] {
                    self.cells.wrapping_sub(1).wrapping_sub(t) as u16
                } else {
                    t as u16
                }
            }
        })
    }

    /// Turns the zigzag residuals in `uvs` into codes: each plus the prediction from
    /// its vertex's position.
    #[inline(always)]
    pub(crate) fn restore(&self, positions: &[[u16; 4]], uvs: &mut [[u16; 2]]) {
        for (uv, &p) in uvs.iter_mut().zip(positions) {
            let q = self.predict(p);
            *uv = [
                unzigzag(uv[0]).wrapping_add(q[0]),
                unzigzag(uv[1]).wrapping_add(q[1]),
            ];
        }
    }
}

/// The `uv_axes` byte (see [`UvFromPositions::new`]) whose prediction leaves the
/// smallest residuals on `uvs` (codes) from `positions` (codes, one per vertex), and
/// those residuals zigzagged; `None` where no axis predicts either component better
/// than storing it as it is.
#[cfg(feature = "encode")]
pub(crate) fn uv_residuals_from_positions(
    uvs: &[[u16; 2]],
    positions: &[[u16; 4]],
    bounds_min: [f32; 3],
    bounds_max: [f32; 3],
    position_bits: u32,
    uv_bits: u32,
) -> Option<(u8, Vec<[u16; 2]>)> {
    // Per component, the candidate of the smallest summed |residual|, among the
    // axes with an extent and both directions; kept only when its mean residual is
    // under a cell's sixteenth of the uv range (else the codes store no worse).
    let cost = |axes: u8, c: usize| -> u64 {
        let f = UvFromPositions::new(axes, bounds_min, bounds_max, position_bits, uv_bits);
        uvs.iter()
            .zip(positions)
            .map(|(uv, &p)| (uv[c].wrapping_sub(f.predict(p)[c]) as i16).unsigned_abs() as u64)
            .sum()
    };
    let limit = uvs.len() as u64 * ((1u64 << uv_bits) / 16).max(1);
    let mut byte = 0u8;
    for c in 0..2 {
        let mut best: Option<(u64, u8)> = None;
        for axis in 1..=3u8 {
            if bounds_max[axis as usize - 1] <= bounds_min[axis as usize - 1] {
                continue;
            }
            for reversed in [0u8, 4] {
                let bits = (axis | reversed) << (3 * c);
                let sum = cost(bits, c);
                if best.is_none_or(|b| sum < b.0) {
                    best = Some((sum, bits));
                }
            }
        }
        if let Some((sum, bits)) = best {
            if sum < limit {
                byte |= bits;
            }
        }
    }
    if byte == 0 {
        return None;
    }
    let f = UvFromPositions::new(byte, bounds_min, bounds_max, position_bits, uv_bits);
    let residuals = uvs
        .iter()
        .zip(positions)
        .map(|(uv, &p)| {
            let q = f.predict(p);
            [
                zigzag(uv[0].wrapping_sub(q[0])),
                zigzag(uv[1].wrapping_sub(q[1])),
            ]
        })
        .collect();
    Some((byte, residuals))
}

#[cfg(test)]
mod tests {
    /// The truncate-and-compare form `round_half_away` replaced.
    fn truncating(x: f32) -> i32 {
        let i = x as i32;
        let f = x - i as f32;
        i + i32::from(f >= 0.5) - i32::from(f <= -0.5)
    }

    #[test]
    fn rounding_half_away_matches_the_truncating_form() {
        // Every tie and its neighbours over the code range and past it, then a
        // stride over all f32 below 2^22 (all of them were compared once, 2.5e9
        // values, both signs).
        let mut xs: Vec<f32> = (-70_000..70_000)
            .map(|k| k as f32 + 0.5)
            .flat_map(|t| [t, t.next_up(), t.next_down(), t.round()])
            .collect();
        let limit = (1u32 << 22) as f32;
        xs.extend(
            (0..0x7f80_0000u32)
                .step_by(9973)
                .map(f32::from_bits)
                .take_while(|x| *x < limit)
                .flat_map(|x| [x, -x]),
        );
        for x in xs {
            assert_eq!(super::round_half_away(x), truncating(x), "{x:e}");
        }
    }
}
