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
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn face_normal(a: [u16; 4], b: [u16; 4], c: [u16; 4]) -> [f32; 4] {
    face_normal_portable(a, b, c)
}

/// The portable [`face_normal`] (also the reference its SSE2 form is tested against).
#[cfg(any(test, not(target_arch = "x86_64")))]
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
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn add_face(sums: &mut [[f32; 4]], corners: [usize; 3], f: [f32; 4]) {
    for i in corners {
        let s = &mut sums[i];
        *s = std::array::from_fn(|k| s[k] + f[k]);
    }
}

/// [`face_normal`] in SSE2 (`simd.rs`): the same bits.
#[cfg(target_arch = "x86_64")]
pub(crate) use crate::simd::face_normal;

/// Adds face normal `f` to its three corners' sums, in corner order.
#[cfg(target_arch = "x86_64")]
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

pub(crate) use crate::unwalk::unpredict;
pub(crate) use crate::walk::{unzigzag, WalkScratch};
#[cfg(feature = "encode")]
pub(crate) use crate::walk::{walk, zigzag};

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
