//! Scalar quantisation against bounds, and octahedral unit vectors.
//!
//! Positions and UVs use cell-centre quantisation: a `bits`-bit code splits the
//! extent into `2^bits` cells and decodes to the centre of its cell, so the error is
//! at most `extent / 2^(bits + 1)` (plus f32 rounding of the decode). Unit vectors
//! use the octahedral map with `bits`-bit signed components and a precise encoder that
//! tries the four neighbouring codes, which keeps 16-bit normals within about 0.003°
//! and holds the six axes exactly.

/// Encodes `x` in `[min, max]` as a cell index of `bits` bits (1..=16).
#[inline]
pub fn quantize_unorm(x: f32, min: f32, max: f32, bits: u32) -> u16 {
    quantize_cells(x, min, max as f64 - min as f64, bits)
}

/// Encodes `x` in `[min, min + extent]` as a cell index of `bits` bits (1..=16); the
/// cells are `extent / 2^bits` wide (see [`unorm_step`] with `(0, extent)`).
#[inline]
pub fn quantize_cells(x: f32, min: f32, extent: f64, bits: u32) -> u16 {
    debug_assert!((1..=16).contains(&bits));
    let cells = (1u32 << bits) as f64;
    if extent <= 0.0 {
        return 0;
    }
    let t = ((x as f64 - min as f64) / extent * cells).floor();
    t.clamp(0.0, cells - 1.0) as u16
}

/// The step (cell size) for `bits` bits over `[min, max]`.
#[inline]
pub fn unorm_step(min: f32, max: f32, bits: u32) -> f32 {
    (max - min) / (1u32 << bits) as f32
}

/// Decodes a cell index to its cell centre, given `unorm_step`.
#[inline]
pub fn dequantize_unorm(q: u16, min: f32, step: f32) -> f32 {
    min + (q as f32 + 0.5) * step
}

/// Largest code magnitude of a `bits`-bit signed octahedral component.
#[inline]
pub fn oct_scale(bits: u32) -> f32 {
    ((1i32 << (bits - 1)) - 1) as f32
}

#[inline]
fn sign_not_zero(v: f32) -> f32 {
    if v >= 0.0 {
        1.0
    } else {
        -1.0
    }
}

/// Octahedral projection of a unit vector to `[-1, 1]^2`.
#[inline]
fn oct_project(n: [f32; 3]) -> [f32; 2] {
    let l1 = n[0].abs() + n[1].abs() + n[2].abs();
    let (x, y) = (n[0] / l1, n[1] / l1);
    if n[2] < 0.0 {
        [
            (1.0 - y.abs()) * sign_not_zero(x),
            (1.0 - x.abs()) * sign_not_zero(y),
        ]
    } else {
        [x, y]
    }
}

/// Decodes an octahedral code of `bits` bits to a unit vector.
#[inline(always)]
pub fn oct_decode(q: [i16; 2], bits: u32) -> [f32; 3] {
    // A multiply by the reciprocal rather than two divisions: in a loop over codes the
    // reciprocal is hoisted, and the divider is what bounds this function's
    // throughput. `s * (1 / s)` is exactly 1 in f32 for every `bits` in 2..=16, so
    // the axes still decode exactly.
    oct_decode_inv(q, 1.0 / oct_scale(bits))
}

/// [`oct_decode`] given `1.0 / oct_scale(bits)`, for loops that hoist it.
#[inline(always)]
pub fn oct_decode_inv(q: [i16; 2], inv_scale: f32) -> [f32; 3] {
    let [x, y, z] = oct_unfold(q, inv_scale);
    let inv = 1.0 / (x * x + y * y + z * z).sqrt();
    [x * inv, y * inv, z * inv]
}

/// The octahedral point of a code, before normalisation: exactly the vector
/// [`oct_decode`] normalises (so the same direction up to its final rounding).
/// Branch-free: the lower hemisphere's fold is a select.
#[inline(always)]
fn oct_unfold(q: [i16; 2], inv_scale: f32) -> [f32; 3] {
    let x = (q[0] as f32 * inv_scale).clamp(-1.0, 1.0);
    let y = (q[1] as f32 * inv_scale).clamp(-1.0, 1.0);
    let z = 1.0 - x.abs() - y.abs();
    // `x` and `y` are never -0.0 (a zero code gives +0.0), so `copysign` is
    // `sign_not_zero`.
    let (fx, fy) = ((1.0 - y.abs()).copysign(x), (1.0 - x.abs()).copysign(y));
    let below = z < 0.0;
    [if below { fx } else { x }, if below { fy } else { y }, z]
}

/// Encodes a unit vector (need not be exactly normalised; a zero vector encodes +Z)
/// as an octahedral code of `bits` bits (2..=16), choosing among the four nearest
/// codes the one whose direction is closest to `n`.
///
/// Candidates are ranked by the squared sine of their angle to `n`,
/// `|d x n|^2 / |d|^2` on the unnormalised octahedral point `d` (so no square root
/// and no normalisation per candidate), compared by cross-multiplication in f64:
/// at 16 bits neighbouring codes differ by ~1e-9 in cosine, below f32's resolution
/// near 1. A candidate on the far side (`d . n <= 0`, only possible at very low bit
/// depths) ranks after every near one.
pub fn oct_encode(n: [f32; 3], bits: u32) -> [i16; 2] {
    debug_assert!((2..=16).contains(&bits));
    // The packers' depth with its scale a constant (and on x86_64 with AVX, the
    // ranks four to a register).
    #[cfg(simd_x86)]
    if bits == 16 && rank4_sse2::avx() {
        return rank4_sse2::oct_encode16_avx(n);
    }
    if bits == 16 {
        oct_encode_scaled::<false>(n, oct_scale(16))
    } else {
        oct_encode_scaled::<false>(n, oct_scale(bits))
    }
}

/// [`oct_encode`] with `s`, `oct_scale` of the depth; `AVX`: the ranks in AVX
/// lanes (x86_64, inlined into a function compiled for AVX only).
#[inline(always)]
fn oct_encode_scaled<const AVX: bool>(n: [f32; 3], s: f32) -> [i16; 2] {
    let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
    if len.is_nan() || len <= 0.0 || !len.is_finite() {
        return [0, 0];
    }
    let n = [n[0] / len, n[1] / len, n[2] / len];
    let p = oct_project(n);
    let inv = 1.0 / s;
    let m = n.map(|x| x as f64);
    // The four codes around `p` and every candidate's rank, computed without a
    // data-dependent branch (the choice is unpredictable, and mispredictions were
    // most of the old encoder's time).
    #[cfg(simd_x86)]
    let (codes, num, den, far) = rank4_sse2::candidates::<AVX>(p, s, inv, n);
    #[cfg(not(simd_x86))]
    let (codes, num, den, far) = candidates(p, s, inv, m);
    if far {
        return oct_encode_far(&codes, m, inv);
    }
    // The best so far kept in registers (its rank, not its index into the ranks).
    let (mut best, mut best_num, mut best_den) = (0, num[0], den[0]);
    for i in 1..4 {
        // Strictly better only, so ties keep the earlier candidate.
        let better = num[i] * best_den < best_num * den[i];
        best = if better { i } else { best };
        best_num = if better { num[i] } else { best_num };
        best_den = if better { den[i] } else { best_den };
    }
    codes[best]
}

/// [`oct_encode`]'s four candidate codes around the octahedral point `p` (scale
/// `s`, `inv` its reciprocal) and their ranks: per code, `|d x m|^2` and `|d|^2`
/// of its octahedral point `d` (in f64), and whether any lies on the far side of
/// `m`. The portable form; on x86_64 [`rank4_sse2::candidates`] computes the same
/// operations in SSE2 lanes (the same bits, tested).
#[cfg_attr(simd_x86, allow(dead_code))]
#[inline(always)]
fn candidates(p: [f32; 2], s: f32, inv: f32, m: [f64; 3]) -> Candidates {
    let (fx, fy) = (floor_small(p[0] * s), floor_small(p[1] * s));
    let codes: [[i16; 2]; 4] = std::array::from_fn(|i| {
        let (dx, dy) = ((i & 1) as f32, (i >> 1) as f32);
        [(fx + dx).clamp(-s, s) as i16, (fy + dy).clamp(-s, s) as i16]
    });
    let (num, den, far) = ranks(&codes, inv, m);
    (codes, num, den, far)
}

/// Four candidate codes, the two halves of their ranks, and whether one is far.
type Candidates = ([[i16; 2]; 4], [f64; 4], [f64; 4], bool);

#[cfg_attr(simd_x86, allow(dead_code))]
#[inline(always)]
fn ranks(codes: &[[i16; 2]; 4], inv: f32, m: [f64; 3]) -> ([f64; 4], [f64; 4], bool) {
    let mut num = [0.0f64; 4];
    let mut den = [0.0f64; 4];
    let mut far = false;
    for i in 0..4 {
        let d = oct_unfold(codes[i], inv).map(|x| x as f64);
        let c = [
            d[1] * m[2] - d[2] * m[1],
            d[2] * m[0] - d[0] * m[2],
            d[0] * m[1] - d[1] * m[0],
        ];
        num[i] = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
        den[i] = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        far |= d[0] * m[0] + d[1] * m[1] + d[2] * m[2] <= 0.0;
    }
    (num, den, far)
}

/// [`ranks`] in SSE2 (every x86_64 CPU has it): the four candidates' octahedral
/// points in one register of f32 lanes, their f64 ranks two to a register
/// (LLVM keeps the portable loop scalar, about 430 instructions an encode). Each
/// lane computes exactly the portable IEEE operations in the same order (no fused
/// multiply-add), so the ranks are the same bits.
///
/// Unsafe code: the intrinsic calls, which carry `#[target_feature]` (SSE2, which
/// every x86_64 CPU has); they read and write registers only (values go in and
/// out through `bytemuck::cast`).
#[cfg(simd_x86)]
#[allow(unsafe_code)]
mod rank4_sse2 {
    use std::arch::x86_64::*;

    /// The ranks' f64 terms of directions `d` against the normal `m`, lanes of any
    /// width (`mul`, `sub`, `add` that width's intrinsics): `(|d x m|^2, |d|^2,
    /// d . m)`, the portable form's IEEE operations in its order. A macro, so each
    /// width's intrinsics stay inside the function compiled for them.
    macro_rules! rank_terms {
        ($d:expr, $m:expr, $mul:ident, $sub:ident, $add:ident) => {{
            let (d, m) = ($d, $m);
            let c = [
                $sub($mul(d[1], m[2]), $mul(d[2], m[1])),
                $sub($mul(d[2], m[0]), $mul(d[0], m[2])),
                $sub($mul(d[0], m[1]), $mul(d[1], m[0])),
            ];
            (
                $add($add($mul(c[0], c[0]), $mul(c[1], c[1])), $mul(c[2], c[2])),
                $add($add($mul(d[0], d[0]), $mul(d[1], d[1])), $mul(d[2], d[2])),
                $add($add($mul(d[0], m[0]), $mul(d[1], m[1])), $mul(d[2], m[2])),
            )
        }};
    }

    /// Whether the CPU runs AVX (std caches the answer).
    #[inline(always)]
    pub(super) fn avx() -> bool {
        std::arch::is_x86_feature_detected!("avx")
    }

    /// `oct_encode(n, 16)` compiled for AVX, its ranks four to a register.
    pub(super) fn oct_encode16_avx(n: [f32; 3]) -> [i16; 2] {
        assert!(avx());
        // SAFETY: the CPU runs AVX (asserted; the caller checked); no memory is
        // touched but through values.
        unsafe { encode16_avx(n) }
    }

    #[target_feature(enable = "avx")]
    unsafe fn encode16_avx(n: [f32; 3]) -> [i16; 2] {
        super::oct_encode_scaled::<true>(n, super::oct_scale(16))
    }

    /// The candidates and their ranks: in AVX (`AVX`, only inlined into a
    /// function compiled for it) or SSE2.
    #[inline(always)]
    pub(super) fn candidates<const AVX: bool>(
        p: [f32; 2],
        s: f32,
        inv: f32,
        n: [f32; 3],
    ) -> super::Candidates {
        let (codes, qx, qy) = codes(p, s);
        // SAFETY: SSE2 is part of the x86_64 baseline, and `AVX` is only set
        // in a function compiled for AVX; no memory is touched.
        let (num, den, far) = unsafe {
            if AVX {
                ranks_avx(qx, qy, inv, n)
            } else {
                ranks_of(qx, qy, inv, n)
            }
        };
        (codes, num, den, far)
    }

    /// The four candidates' ranks with AVX: the octahedral points as in
    /// [`ranks_of`], the f64 arithmetic four lanes wide.
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn ranks_avx(
        qx: __m128,
        qy: __m128,
        inv: f32,
        n: [f32; 3],
    ) -> ([f64; 4], [f64; 4], bool) {
        let [x, y, z] = unfold(qx, qy, inv);
        let m = n.map(|v| _mm256_set1_pd(v as f64));
        let d = [_mm256_cvtps_pd(x), _mm256_cvtps_pd(y), _mm256_cvtps_pd(z)];
        let (num, den, dot) = rank_terms!(d, m, _mm256_mul_pd, _mm256_sub_pd, _mm256_add_pd);
        let far = _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LE_OQ>(dot, _mm256_setzero_pd()));
        (bytemuck::cast(num), bytemuck::cast(den), far != 0)
    }

    /// SSE2 candidates (for the tests' comparison with the portable form).
    #[cfg(test)]
    pub(super) fn candidates_sse2(p: [f32; 2], s: f32, inv: f32, n: [f32; 3]) -> super::Candidates {
        candidates::<false>(p, s, inv, n)
    }

    /// AVX candidates, when the CPU runs AVX (for the tests).
    #[cfg(test)]
    pub(super) fn candidates_avx(
        p: [f32; 2],
        s: f32,
        inv: f32,
        n: [f32; 3],
    ) -> Option<super::Candidates> {
        #[target_feature(enable = "avx")]
        unsafe fn run(p: [f32; 2], s: f32, inv: f32, n: [f32; 3]) -> super::Candidates {
            candidates::<true>(p, s, inv, n)
        }
        // SAFETY: called only when the CPU runs AVX.
        avx().then(|| unsafe { run(p, s, inv, n) })
    }

    /// The four codes: `floor_small` of `p * s` (`p` is within [-1, 1], so the
    /// truncation never saturates: the scalar cast's value), each candidate
    /// clamped to `[-s, s]` as `f32::clamp` (max then min; no NaN here), and its
    /// code that value (an integer within i16's range); and those values as x
    /// and y lanes.
    #[inline(always)]
    fn codes(p: [f32; 2], s: f32) -> ([[i16; 2]; 4], __m128, __m128) {
        // SAFETY: SSE2 is part of the x86_64 baseline; no memory is touched.
        unsafe {
            let one = _mm_set1_ps(1.0);
            let ps = _mm_mul_ps(_mm_setr_ps(p[0], p[1], p[0], p[1]), _mm_set1_ps(s));
            let t = _mm_cvtepi32_ps(_mm_cvttps_epi32(ps));
            let f = _mm_sub_ps(t, _mm_and_ps(_mm_cmpgt_ps(t, ps), one));
            let (lo, hi) = (_mm_set1_ps(-s), _mm_set1_ps(s));
            let clamp = |v| _mm_min_ps(_mm_max_ps(v, lo), hi);
            let qx = clamp(_mm_add_ps(
                _mm_shuffle_ps::<0b00_00_00_00>(f, f),
                _mm_setr_ps(0.0, 1.0, 0.0, 1.0),
            ));
            let qy = clamp(_mm_add_ps(
                _mm_shuffle_ps::<0b01_01_01_01>(f, f),
                _mm_setr_ps(0.0, 0.0, 1.0, 1.0),
            ));
            let (cx, cy): ([i32; 4], [i32; 4]) = (
                bytemuck::cast(_mm_cvttps_epi32(qx)),
                bytemuck::cast(_mm_cvttps_epi32(qy)),
            );
            let codes = std::array::from_fn(|i| [cx[i] as i16, cy[i] as i16]);
            (codes, qx, qy)
        }
    }

    /// `oct_unfold` lane by lane (`clamp` is max then min: no NaN here).
    #[inline(always)]
    unsafe fn unfold(qx: __m128, qy: __m128, inv: f32) -> [__m128; 3] {
        let inv = _mm_set1_ps(inv);
        let (one, minus, sign) = (_mm_set1_ps(1.0), _mm_set1_ps(-1.0), _mm_set1_ps(-0.0));
        let x = _mm_min_ps(_mm_max_ps(_mm_mul_ps(qx, inv), minus), one);
        let y = _mm_min_ps(_mm_max_ps(_mm_mul_ps(qy, inv), minus), one);
        let (ax, ay) = (_mm_andnot_ps(sign, x), _mm_andnot_ps(sign, y));
        let z = _mm_sub_ps(_mm_sub_ps(one, ax), ay);
        // copysign(1 - |y|, x): 1 - |y| is never negative.
        let fx = _mm_or_ps(_mm_sub_ps(one, ay), _mm_and_ps(sign, x));
        let fy = _mm_or_ps(_mm_sub_ps(one, ax), _mm_and_ps(sign, y));
        let below = _mm_cmplt_ps(z, _mm_setzero_ps());
        let select = |a, b| _mm_or_ps(_mm_and_ps(below, a), _mm_andnot_ps(below, b));
        [select(fx, x), select(fy, y), z]
    }

    /// The ranks of the codes whose values are `qx`, `qy` (lanes of f32).
    #[inline(always)]
    unsafe fn ranks_of(
        qx: __m128,
        qy: __m128,
        inv: f32,
        n: [f32; 3],
    ) -> ([f64; 4], [f64; 4], bool) {
        let [x, y, z] = unfold(qx, qy, inv);
        let m = n.map(|v| _mm_set1_pd(v as f64));
        let half = |lo: bool| {
            let wide = |v: __m128| _mm_cvtps_pd(if lo { v } else { _mm_movehl_ps(v, v) });
            let d = [wide(x), wide(y), wide(z)];
            let (num, den, dot) = rank_terms!(d, m, _mm_mul_pd, _mm_sub_pd, _mm_add_pd);
            let far = _mm_movemask_pd(_mm_cmple_pd(dot, _mm_setzero_pd()));
            (num, den, far)
        };
        let (num_lo, den_lo, far_lo) = half(true);
        let (num_hi, den_hi, far_hi) = half(false);
        let (num_lo, num_hi): ([f64; 2], [f64; 2]) =
            (bytemuck::cast(num_lo), bytemuck::cast(num_hi));
        let (den_lo, den_hi): ([f64; 2], [f64; 2]) =
            (bytemuck::cast(den_lo), bytemuck::cast(den_hi));
        (
            [num_lo[0], num_lo[1], num_hi[0], num_hi[1]],
            [den_lo[0], den_lo[1], den_hi[0], den_hi[1]],
            (far_lo | far_hi) != 0,
        )
    }
}

/// `x.floor()` for `|x| < 2^23`, without a libm call.
#[inline]
fn floor_small(x: f32) -> f32 {
    let t = x as i32 as f32;
    if t > x {
        t - 1.0
    } else {
        t
    }
}

/// [`oct_encode`]'s ranking when a candidate lies on the far side (`d . n <= 0`,
/// only at very low bit depths): near candidates by squared sine, then far ones
/// by cosine.
#[cold]
fn oct_encode_far(codes: &[[i16; 2]; 4], m: [f64; 3], inv: f32) -> [i16; 2] {
    let mut best = codes[0];
    let (mut best_far, mut best_num, mut best_den) = (true, f64::INFINITY, 1.0f64);
    for &q in codes {
        let d = oct_unfold(q, inv).map(|x| x as f64);
        let dot = d[0] * m[0] + d[1] * m[1] + d[2] * m[2];
        let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        let (far, num, den) = if dot > 0.0 {
            let c = [
                d[1] * m[2] - d[2] * m[1],
                d[2] * m[0] - d[0] * m[2],
                d[0] * m[1] - d[1] * m[0],
            ];
            (false, c[0] * c[0] + c[1] * c[1] + c[2] * c[2], d2)
        } else {
            (true, -dot / d2.sqrt(), 1.0)
        };
        let better = match (far, best_far) {
            (false, true) => true,
            (true, false) => false,
            _ => num * best_den < best_num * den,
        };
        if better {
            (best_far, best_num, best_den) = (far, num, den);
            best = q;
        }
    }
    best
}

/// IEEE half-float bits of `x` (round to nearest).
#[inline]
pub fn f16_bits(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// The f32 value of IEEE half-float bits.
#[inline]
pub fn f16_value(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_six_axes_round_trip_exactly_at_every_bit_depth() {
        for bits in 2..=16 {
            for axis in 0..3 {
                for sign in [1.0f32, -1.0] {
                    let mut n = [0.0f32; 3];
                    n[axis] = sign;
                    let back = oct_decode(oct_encode(n, bits), bits);
                    assert_eq!(back, n, "axis {axis} sign {sign} at {bits} bits");
                }
            }
        }
    }

    /// The encoder this one replaced: decodes each candidate (normalised, f32) and
    /// ranks by the f64 squared sine against the decoded vector.
    fn oct_encode_by_decoding(n: [f32; 3], bits: u32) -> [i16; 2] {
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        let n = [n[0] / len, n[1] / len, n[2] / len];
        let p = oct_project(n);
        let s = oct_scale(bits);
        let (fx, fy) = ((p[0] * s).floor(), (p[1] * s).floor());
        let (mut best, mut best_err) = ([0i16; 2], f64::INFINITY);
        for (dx, dy) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)] {
            let q = [(fx + dx).clamp(-s, s) as i16, (fy + dy).clamp(-s, s) as i16];
            let d = oct_decode(q, bits).map(|x| x as f64);
            let m = n.map(|x| x as f64);
            let c = [
                d[1] * m[2] - d[2] * m[1],
                d[2] * m[0] - d[0] * m[2],
                d[0] * m[1] - d[1] * m[0],
            ];
            let dot = d[0] * m[0] + d[1] * m[1] + d[2] * m[2];
            let err = if dot > 0.0 {
                c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
            } else {
                4.0 - dot
            };
            if err < best_err {
                (best, best_err) = (q, err);
            }
        }
        best
    }

    /// Angle in degrees between `n` and the decoded code, in f64.
    fn angle_deg(n: [f32; 3], q: [i16; 2], bits: u32) -> f64 {
        let d = oct_decode(q, bits).map(|x| x as f64);
        let m = n.map(|x| x as f64);
        let lm = (m[0] * m[0] + m[1] * m[1] + m[2] * m[2]).sqrt();
        let c = [
            d[1] * m[2] - d[2] * m[1],
            d[2] * m[0] - d[0] * m[2],
            d[0] * m[1] - d[1] * m[0],
        ];
        let dot = (d[0] * m[0] + d[1] * m[1] + d[2] * m[2]) / lm;
        let sin = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt() / lm;
        sin.atan2(dot).to_degrees()
    }

    #[test]
    fn the_encoder_is_as_precise_as_decoding_every_candidate() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        for bits in [4, 8, 10, 12, 16] {
            let mut worst = 0.0f64;
            for _ in 0..20_000 {
                let n = [next(), next(), next()];
                if n.iter().map(|x| x * x).sum::<f32>() < 1e-6 {
                    continue;
                }
                let (new, old) = (oct_encode(n, bits), oct_encode_by_decoding(n, bits));
                let (a_new, a_old) = (angle_deg(n, new, bits), angle_deg(n, old, bits));
                // Either the same code, or one no further off than f32 decode
                // rounding (~1e-5 degrees) can tell apart.
                assert!(
                    new == old || a_new <= a_old + 1e-5,
                    "{n:?} at {bits} bits: {new:?} at {a_new} deg, old {old:?} at {a_old} deg"
                );
                worst = worst.max(a_new);
            }
            if bits == 16 {
                assert!(worst < 0.004, "worst {worst} degrees at 16 bits");
            }
        }
    }

    /// The SSE2 candidates and ranks are the portable ones, bit for bit, and the
    /// encoder gives the codes of the scalar encoder it replaced: random
    /// directions at every bit depth, the axes and diagonals (ties), the lower
    /// hemisphere's fold, the clamped edge of the square, tiny and huge vectors.
    #[cfg(simd_x86)]
    #[test]
    fn the_sse2_candidates_are_the_portable_ones() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        let mut inputs: Vec<[f32; 3]> = (0..300_000).map(|_| [next(), next(), next()]).collect();
        let values = [
            -1.0f32, -0.5, -0.0, 0.0, 0.5, 1.0, 1e-30, -1e-30, 3e19, 1e-20,
        ];
        for a in values {
            for b in values {
                for c in values {
                    inputs.push([a, b, c]);
                }
            }
        }
        // Near the fold and the square's edge.
        for k in 0..20_000 {
            let e = (k as f32) * 1e-7;
            inputs.push([1.0 - e, e, -e]);
            inputs.push([-e, 1.0, e - 1e-3]);
            inputs.push([0.5 + e, -0.5, -e]);
        }
        for (k, n) in inputs.into_iter().enumerate() {
            for bits in [16, [12, 10, 8, 4, 2, 3, 15][k % 7]] {
                assert_eq!(
                    oct_encode(n, bits),
                    oct_encode_scalar(n, bits),
                    "{n:?} at {bits} bits"
                );
                let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
                if len.is_nan() || len <= 0.0 || !len.is_finite() {
                    continue;
                }
                let n = [n[0] / len, n[1] / len, n[2] / len];
                let (p, s) = (oct_project(n), oct_scale(bits));
                let inv = 1.0 / s;
                let bits_of =
                    |r: Candidates| (r.0, r.1.map(f64::to_bits), r.2.map(f64::to_bits), r.3);
                let portable = bits_of(candidates(p, s, inv, n.map(|x| x as f64)));
                let sse2 = rank4_sse2::candidates_sse2(p, s, inv, n);
                assert_eq!(portable, bits_of(sse2), "{n:?} at {bits} bits");
                if let Some(avx) = rank4_sse2::candidates_avx(p, s, inv, n) {
                    assert_eq!(portable, bits_of(avx), "{n:?} at {bits} bits (AVX)");
                }
            }
        }
    }

    /// The scalar encoder the SSE2 candidates replaced, as it was.
    #[cfg(simd_x86)]
    fn oct_encode_scalar(n: [f32; 3], bits: u32) -> [i16; 2] {
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        if len.is_nan() || len <= 0.0 || !len.is_finite() {
            return [0, 0];
        }
        let n = [n[0] / len, n[1] / len, n[2] / len];
        let p = oct_project(n);
        let s = oct_scale(bits);
        let inv = 1.0 / s;
        let (fx, fy) = (floor_small(p[0] * s), floor_small(p[1] * s));
        let m = n.map(|x| x as f64);
        let codes: [[i16; 2]; 4] = std::array::from_fn(|i| {
            let (dx, dy) = ((i & 1) as f32, (i >> 1) as f32);
            [(fx + dx).clamp(-s, s) as i16, (fy + dy).clamp(-s, s) as i16]
        });
        let (num, den, far) = ranks(&codes, inv, m);
        if far {
            return oct_encode_far(&codes, m, inv);
        }
        let mut best = 0;
        for i in 1..4 {
            best = if num[i] * den[best] < num[best] * den[i] {
                i
            } else {
                best
            };
        }
        codes[best]
    }
}
