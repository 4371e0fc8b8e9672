//! The decoder's instruction sets, on x86_64 only.
//!
//! - **Tiers.** The whole decode (`CookedMesh::stages` with everything it inlines) is
//!   compiled three times: for the SSE2 baseline, for AVX2 with BMI1/BMI2, and for
//!   AVX2 plus AVX-512; [`Tier::detect`] picks the best the CPU runs, once per
//!   decode (std caches the answers). The wide tiers let LLVM widen the portable
//!   per-vertex loops (8 or 16 lanes) and use BMI2's flag-free shifts in the bit
//!   unpacking and the walk: on pirate (`decode_profile`, best of 3000) the decode
//!   takes 27.8 ns per triangle in the baseline tier, 26.4 in AVX2's and 24.4 in
//!   AVX-512's on the AMD EPYC it was measured on.
//! - **SSE2 forms** of the hottest per-vertex and per-triangle arithmetic, used by
//!   the baseline tier (and the per-triangle ones by every tier), because LLVM makes
//!   poor SSE2 code of these loops: it moves `[u16; 4]` positions through general
//!   registers word by word, and does not vectorise the octahedral decode across
//!   vertices in 4 lanes.
//!
//! Every form and every tier computes exactly the IEEE and integer operations of the
//! portable code in the same order (no fused multiply-add is enabled, and Rust never
//! contracts on its own), so all give the same bits: tests check each SSE2 form on
//! random inputs and every tier this CPU runs on cooked meshes. Other targets use
//! the portable forms.
//!
//! Unsafe code: the intrinsic calls, which are `unsafe` because they carry
//! `#[target_feature]`; every one reads and writes registers, never memory (loads
//! and stores go through `bytemuck::cast` on values), so the only obligation is
//! that the CPU has SSE2, which every x86_64 CPU does. And the calls into the
//! AVX2 and AVX-512 tiers, whose obligation (the CPU has the features) is checked
//! by [`Tier::detect`] and asserted before each call.

#![allow(unsafe_code)]

use std::arch::x86_64::*;

/// The instruction sets a decode may be compiled for, best last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tier {
    /// The x86_64 baseline.
    Sse2,
    /// AVX2 with BMI1/BMI2 (Haswell, Zen and later).
    Avx2,
    /// [`Tier::Avx2`] plus AVX-512 F/BW/VL/DQ (Ice Lake, Zen 4 and later).
    Avx512,
}

impl Tier {
    /// The best tier this CPU runs (std caches each answer).
    #[inline]
    pub(crate) fn detect() -> Tier {
        let avx2 = is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("bmi1")
            && is_x86_feature_detected!("bmi2")
            && is_x86_feature_detected!("lzcnt")
            && is_x86_feature_detected!("popcnt");
        let avx512 = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512dq");
        match (avx2, avx512) {
            (true, true) => Tier::Avx512,
            (true, false) => Tier::Avx2,
            _ => Tier::Sse2,
        }
    }
}

/// `(b - a) x (c - a)` of quantised positions in f32 lanes (x, y, z, +0.0): see
/// `predict::face_normal`.
#[inline(always)]
pub(crate) fn face_normal(a: [u16; 4], b: [u16; 4], c: [u16; 4]) -> [f32; 4] {
    // SAFETY: SSE2 is in the x86_64 baseline; registers only.
    unsafe {
        let lanes = |p: [u16; 4]| {
            let x = _mm_cvtsi64_si128(bytemuck::cast::<[u16; 4], i64>(p));
            _mm_cvtepi32_ps(_mm_unpacklo_epi16(x, _mm_setzero_si128()))
        };
        let (a, b, c) = (lanes(a), lanes(b), lanes(c));
        let (e1, e2) = (_mm_sub_ps(b, a), _mm_sub_ps(c, a));
        // Lanes (y, z, x, w) and (z, x, y, w).
        const YZX: i32 = 0b11_00_10_01;
        const ZXY: i32 = 0b11_01_00_10;
        let l = _mm_mul_ps(_mm_shuffle_ps::<YZX>(e1, e1), _mm_shuffle_ps::<ZXY>(e2, e2));
        let r = _mm_mul_ps(_mm_shuffle_ps::<ZXY>(e1, e1), _mm_shuffle_ps::<YZX>(e2, e2));
        bytemuck::cast(_mm_sub_ps(l, r))
    }
}

/// `s += f` lane by lane.
#[inline(always)]
pub(crate) fn add4(s: [f32; 4], f: [f32; 4]) -> [f32; 4] {
    // SAFETY: SSE is in the x86_64 baseline; registers only.
    bytemuck::cast(unsafe { _mm_add_ps(bytemuck::cast(s), bytemuck::cast(f)) })
}

/// Per lane: `if m { a } else { b }` for an all-ones / all-zeros mask `m`.
#[inline(always)]
unsafe fn select(m: __m128, a: __m128, b: __m128) -> __m128 {
    _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b))
}

/// Per lane `|x|`.
#[inline(always)]
unsafe fn abs(x: __m128) -> __m128 {
    _mm_andnot_ps(_mm_set1_ps(-0.0), x)
}

/// Four octahedral codes (x and y as sign-extended i32 lanes) to unit vectors: the
/// portable `quant::oct_decode_inv` lane by lane.
#[inline(always)]
unsafe fn oct_decode4(qx: __m128i, qy: __m128i, inv: __m128) -> [__m128; 3] {
    let (one, minus) = (_mm_set1_ps(1.0), _mm_set1_ps(-1.0));
    let x = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_cvtepi32_ps(qx), inv), minus), one);
    let y = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_cvtepi32_ps(qy), inv), minus), one);
    let z = _mm_sub_ps(_mm_sub_ps(one, abs(x)), abs(y));
    // copysign(1 - |y|, x): 1 - |y| is never negative.
    let sign = _mm_set1_ps(-0.0);
    let fx = _mm_or_ps(_mm_sub_ps(one, abs(y)), _mm_and_ps(sign, x));
    let fy = _mm_or_ps(_mm_sub_ps(one, abs(x)), _mm_and_ps(sign, y));
    let below = _mm_cmplt_ps(z, _mm_setzero_ps());
    let (x, y) = (select(below, fx, x), select(below, fy, y));
    let len2 = _mm_add_ps(
        _mm_add_ps(_mm_mul_ps(x, x), _mm_mul_ps(y, y)),
        _mm_mul_ps(z, z),
    );
    let k = _mm_div_ps(one, _mm_sqrt_ps(len2));
    [_mm_mul_ps(x, k), _mm_mul_ps(y, k), _mm_mul_ps(z, k)]
}

/// Four lanes of (x, y, z) as four `[f32; 3]`.
#[inline(always)]
fn interleave3([x, y, z]: [__m128; 3]) -> [[f32; 3]; 4] {
    let (x, y, z): ([f32; 4], [f32; 4], [f32; 4]) =
        (bytemuck::cast(x), bytemuck::cast(y), bytemuck::cast(z));
    std::array::from_fn(|i| [x[i], y[i], z[i]])
}

/// Four `[i16; 2]` codes as x and y lanes (sign-extended i32).
#[inline(always)]
unsafe fn codes4(q: &[[i16; 2]]) -> (__m128i, __m128i) {
    let v: __m128i = bytemuck::cast(<[[i16; 2]; 4]>::try_from(q).expect("four codes"));
    (
        _mm_srai_epi32::<16>(_mm_slli_epi32::<16>(v)),
        _mm_srai_epi32::<16>(v),
    )
}

/// Normals from residuals and face-normal sums, four vertices at a time: the
/// portable loop `oct_decode_inv(residual + predict::predicted_code(sum, scale), inv)`
/// lane by lane. Writes the first `out.len() / 4 * 4` normals (`residuals` and
/// `sums` at least as long as `out`); returns how many.
#[inline(always)]
pub(crate) fn predicted_normals(
    residuals: &[[i16; 2]],
    sums: &[[f32; 4]],
    scale: f32,
    inv_scale: f32,
    out: &mut [[f32; 3]],
) -> usize {
    let n = out.len() / 4 * 4;
    // SAFETY: SSE2 is in the x86_64 baseline; registers only.
    unsafe {
        let (one, zero) = (_mm_set1_ps(1.0), _mm_setzero_ps());
        let (scale, inv) = (_mm_set1_ps(scale), _mm_set1_ps(inv_scale));
        let half = _mm_set1_ps(0.5);
        let (q4, s4) = (residuals[..n].chunks_exact(4), sums[..n].chunks_exact(4));
        for ((q, s), o) in q4.zip(s4).zip(out[..n].chunks_exact_mut(4)) {
            // Transpose four (x, y, z, 0) sums into x, y and z lanes.
            let [s0, s1, s2, s3]: [__m128; 4] =
                std::array::from_fn(|i| bytemuck::cast::<[f32; 4], __m128>(s[i]));
            let (t0, t1) = (_mm_unpacklo_ps(s0, s1), _mm_unpacklo_ps(s2, s3));
            let (t2, t3) = (_mm_unpackhi_ps(s0, s1), _mm_unpackhi_ps(s2, s3));
            let (sx, sy) = (_mm_movelh_ps(t0, t1), _mm_movehl_ps(t1, t0));
            let sz = _mm_movelh_ps(t2, t3);
            // predict::predicted_code.
            let l1 = _mm_add_ps(_mm_add_ps(abs(sx), abs(sy)), abs(sz));
            let d = select(_mm_cmpeq_ps(l1, zero), one, l1);
            let (x, y) = (_mm_div_ps(sx, d), _mm_div_ps(sy, d));
            let sgn = |v: __m128| select(_mm_cmplt_ps(v, zero), _mm_set1_ps(-1.0), one);
            let fx = _mm_mul_ps(_mm_sub_ps(one, abs(y)), sgn(x));
            let fy = _mm_mul_ps(_mm_sub_ps(one, abs(x)), sgn(y));
            let below = _mm_cmplt_ps(sz, zero);
            let (x, y) = (select(below, fx, x), select(below, fy, y));
            let round = |v: __m128| {
                let v = _mm_mul_ps(v, scale);
                let i = _mm_cvttps_epi32(v);
                let f = _mm_sub_ps(v, _mm_cvtepi32_ps(i));
                // Masks are -1 where true: i + (f >= 0.5) - (f <= -0.5).
                let up = _mm_castps_si128(_mm_cmpge_ps(f, half));
                let down = _mm_castps_si128(_mm_cmple_ps(f, _mm_set1_ps(-0.5)));
                _mm_add_epi32(_mm_sub_epi32(i, up), down)
            };
            let (px, py) = (round(x), round(y));
            // Residual plus prediction, wrapping in 16 bits.
            let (rx, ry) = codes4(q);
            let wrap = |v: __m128i| _mm_srai_epi32::<16>(_mm_slli_epi32::<16>(v));
            let (cx, cy) = (wrap(_mm_add_epi32(rx, px)), wrap(_mm_add_epi32(ry, py)));
            o.copy_from_slice(&interleave3(oct_decode4(cx, cy, inv)));
        }
    }
    n
}

/// Unit vectors of octahedral codes, four at a time: the portable
/// `quant::oct_decode_inv` lane by lane. Writes the first `out.len() / 4 * 4`
/// (`codes` at least as long as `out`); returns how many.
#[inline(always)]
pub(crate) fn oct_decode_all(codes: &[[i16; 2]], inv_scale: f32, out: &mut [[f32; 3]]) -> usize {
    let n = out.len() / 4 * 4;
    // SAFETY: SSE2 is in the x86_64 baseline; registers only.
    unsafe {
        let inv = _mm_set1_ps(inv_scale);
        for (q, o) in codes[..n].chunks_exact(4).zip(out[..n].chunks_exact_mut(4)) {
            let (x, y) = codes4(q);
            o.copy_from_slice(&interleave3(oct_decode4(x, y, inv)));
        }
    }
    n
}

/// Tangents from octahedral codes with the handedness in bit 0 of each position's w
/// (set: -1), four at a time: the portable loop lane by lane. Writes the first
/// `out.len() / 4 * 4` (`codes` and `positions` at least as long as `out`); returns
/// how many.
#[inline(always)]
pub(crate) fn tangents(
    codes: &[[i16; 2]],
    positions: &[[u16; 4]],
    inv_scale: f32,
    out: &mut [[f32; 4]],
) -> usize {
    let n = out.len() / 4 * 4;
    // SAFETY: SSE2 is in the x86_64 baseline; registers only.
    unsafe {
        let inv = _mm_set1_ps(inv_scale);
        let (q4, p4) = (codes[..n].chunks_exact(4), positions[..n].chunks_exact(4));
        for ((q, p), o) in q4.zip(p4).zip(out[..n].chunks_exact_mut(4)) {
            let (x, y) = codes4(q);
            let t = interleave3(oct_decode4(x, y, inv));
            for i in 0..4 {
                let w = if p[i][3] & 1 != 0 { -1.0 } else { 1.0 };
                o[i] = [t[i][0], t[i][1], t[i][2], w];
            }
        }
    }
    n
}

/// The walk's restore of one vertex: lanes `0..C` become the weight-`w`
/// parallelogram of `a`, `b`, `c` (`walk::parallelogram`: `((a + b)(8 + w) -
/// 2wc) >> 4`, clamped to 0..=65535) plus the unzigzagged residual in `r`; the other
/// lanes keep `r`'s. Exact integer arithmetic in 32-bit lanes (codes are offset by
/// 32768 to fit `pmaddwd`'s signed inputs, and the offset added back), so the same
/// values as the portable form. `w` is 0..=8. The walk restores vertex after vertex
/// from ones it has just restored, so this function's latency, not its throughput,
/// bounds the walk: the plain parallelogram (`w` = 8) and the midpoint (`w` = 0),
/// nearly every call, take shorter forms (measured 0.4 ns per triangle on pirate).
#[inline(always)]
pub(crate) fn restore<const C: usize>(
    a: [u16; 4],
    b: [u16; 4],
    c: [u16; 4],
    r: [u16; 4],
    w: i32,
) -> [u16; 4] {
    // SAFETY: SSE2 is in the x86_64 baseline; registers only.
    unsafe {
        let load = |p: [u16; 4]| _mm_cvtsi64_si128(bytemuck::cast::<[u16; 4], i64>(p));
        let bias = _mm_set1_epi16(i16::MIN);
        let keep = _mm_cvtsi64_si128(-1i64 << (16 * C));
        // Off the walk's chain (the residual does not depend on earlier vertices):
        // the residual (unzigzagged already) plus the offset the prediction comes
        // back with, and the kept lanes as they are (one add of a constant).
        let add = _mm_add_epi16(load(r), _mm_andnot_si128(keep, bias));
        // On the chain from one restored vertex to the next, as few steps as the
        // weight allows: the prediction offset by -32768 in 32-bit lanes.
        let zero = _mm_setzero_si128();
        let wide = |p: [u16; 4]| _mm_unpacklo_epi16(load(p), zero);
        let v = if w == 8 {
            // The plain parallelogram a + b - c.
            let v = _mm_sub_epi32(wide(a), _mm_add_epi32(wide(c), _mm_set1_epi32(32768)));
            _mm_add_epi32(v, wide(b))
        } else if w == 0 {
            // The midpoint (a + b) / 2, as (a & b) + ((a ^ b) >> 1) in the 16-bit
            // lanes (exact, no overflow). Not the 32-bit (wide(a) + wide(b)) >> 1:
            // LLVM rewrote that into this very form but, sharing a's widening with
            // the w = 8 branch above, widened a against itself rather than zero
            // there too, a miscompile that restored wrong uvs in a non-inlined
            // walk (rustc 1.95, `unpredict` tried `#[inline(never)]`; the test
            // `every_instance_the_decoder_calls_restores_what_the_encoder_walked`
            // did not reproduce it, a standalone `unpredict` did).
            let (la, lb) = (load(a), load(b));
            let m = _mm_add_epi16(
                _mm_and_si128(la, lb),
                _mm_srli_epi16::<1>(_mm_xor_si128(la, lb)),
            );
            _mm_sub_epi32(_mm_unpacklo_epi16(m, zero), _mm_set1_epi32(32768))
        } else {
            let lanes = |p: [u16; 4]| _mm_xor_si128(load(p), bias);
            let (a, b, c) = (lanes(a), lanes(b), lanes(c));
            let ab = _mm_madd_epi16(_mm_unpacklo_epi16(a, b), _mm_set1_epi16((8 + w) as i16));
            let c0 = _mm_unpacklo_epi16(c, zero);
            let cw = _mm_madd_epi16(c0, _mm_set1_epi32((-2 * w) as u16 as i32));
            // (a' + b')(8 + w) - 2wc' = (a + b)(8 + w) - 2wc - 8 * 65536.
            let v = _mm_add_epi32(_mm_add_epi32(ab, cw), _mm_set1_epi32(8 << 16));
            _mm_sub_epi32(_mm_srai_epi32::<4>(v), _mm_set1_epi32(32768))
        };
        // Signed saturation to i16 is the clamp to the code range, offset; the offset
        // comes back with `add` (adding 32768 is flipping the top bit).
        let pred = _mm_andnot_si128(keep, _mm_packs_epi32(v, v));
        bytemuck::cast(_mm_cvtsi128_si64(_mm_add_epi16(pred, add)))
    }
}

/// Positions from their cell codes, the portable `quant::dequantize_unorm` lane by
/// lane (`min + (q + 0.5) * step`): each vertex as one four-lane operation, stored as
/// 16 bytes whose fourth lane the next vertex overwrites. Writes all but the last
/// of `out` (which would need a store past the end); returns how many.
#[inline(always)]
pub(crate) fn dequantize_positions(
    codes: &[[u16; 4]],
    min: [f32; 3],
    step: f32,
    out: &mut [[f32; 3]],
) -> usize {
    let n = out.len().saturating_sub(1);
    let flat: &mut [f32] = bytemuck::cast_slice_mut(out);
    // SAFETY: SSE2 is in the x86_64 baseline; registers only.
    unsafe {
        let (half, step) = (_mm_set1_ps(0.5), _mm_set1_ps(step));
        let min = _mm_setr_ps(min[0], min[1], min[2], 0.0);
        let zero = _mm_setzero_si128();
        for (i, &q) in codes[..n].iter().enumerate() {
            let q = _mm_cvtsi64_si128(bytemuck::cast::<[u16; 4], i64>(q));
            let f = _mm_cvtepi32_ps(_mm_unpacklo_epi16(q, zero));
            let v = _mm_add_ps(min, _mm_mul_ps(_mm_add_ps(f, half), step));
            flat[3 * i..3 * i + 4].copy_from_slice(&bytemuck::cast::<__m128, [f32; 4]>(v));
        }
    }
    n
}

/// Uvs from their cell codes, the portable `quant::dequantize_unorm` lane by lane,
/// two vertices per operation. Writes the first `out.len() / 2 * 2`; returns how
/// many.
#[inline(always)]
pub(crate) fn dequantize_uvs(
    codes: &[[u16; 2]],
    min: [f32; 2],
    step: [f32; 2],
    out: &mut [[f32; 2]],
) -> usize {
    let n = out.len() / 2 * 2;
    // SAFETY: SSE2 is in the x86_64 baseline; registers only.
    unsafe {
        let half = _mm_set1_ps(0.5);
        let step = _mm_setr_ps(step[0], step[1], step[0], step[1]);
        let min = _mm_setr_ps(min[0], min[1], min[0], min[1]);
        let zero = _mm_setzero_si128();
        for (q, o) in codes[..n].chunks_exact(2).zip(out[..n].chunks_exact_mut(2)) {
            let q = _mm_cvtsi64_si128(bytemuck::cast::<[[u16; 2]; 2], i64>([q[0], q[1]]));
            let f = _mm_cvtepi32_ps(_mm_unpacklo_epi16(q, zero));
            let v = _mm_add_ps(min, _mm_mul_ps(_mm_add_ps(f, half), step));
            o.copy_from_slice(&bytemuck::cast::<__m128, [[f32; 2]; 2]>(v));
        }
    }
    n
}

/// [`crate::cooked::join_planes`] for 4-byte elements (indices, normals, uvs, the
/// shared-positions remap): 16 elements a step, each byte plane loaded 16 bytes at a
/// time and interleaved by SSE2's byte and word unpacks. `p` is the four planes of
/// `n` bytes each and `out` the `4 n` bytes; joins whole steps of 16 and returns how
/// many elements that was (the caller joins the rest). Where the CPU has AVX2, 32
/// elements a step first ([`join_planes4_avx2`]), then the rest of the steps of 16.
#[inline(always)]
pub(crate) fn join_planes4(p: [&[u8]; 4], out: &mut [u8]) -> usize {
    let wide = if Tier::detect() >= Tier::Avx2 {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { join_planes4_avx2(p, out) }
    } else {
        0
    };
    let p = p.map(|plane| &plane[wide..]);
    wide + join_planes4_sse2(p, &mut out[4 * wide..])
}

/// [`join_planes4`] 32 elements a step in AVX2: the same unpacks in each 128-bit
/// half, whose four results then hold elements 0-3 and 16-19, 4-7 and 20-23, 8-11
/// and 24-27, 12-15 and 28-31; a lane permute puts them in order. Returns how many
/// elements it joined.
#[target_feature(enable = "avx2")]
fn join_planes4_avx2(p: [&[u8]; 4], out: &mut [u8]) -> usize {
    let blocks = p[0].len() / 32;
    for (k, o) in out.chunks_exact_mut(128).take(blocks).enumerate() {
        let at = 32 * k;
        let load = |plane: &[u8]| -> __m256i {
            let bytes: [u8; 32] = plane[at..at + 32].try_into().expect("32 bytes");
            bytemuck::cast(bytes)
        };
        let (a, b, c, d) = (load(p[0]), load(p[1]), load(p[2]), load(p[3]));
        let (ab_lo, ab_hi) = (_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b));
        let (cd_lo, cd_hi) = (_mm256_unpacklo_epi8(c, d), _mm256_unpackhi_epi8(c, d));
        let r0 = _mm256_unpacklo_epi16(ab_lo, cd_lo);
        let r1 = _mm256_unpackhi_epi16(ab_lo, cd_lo);
        let r2 = _mm256_unpacklo_epi16(ab_hi, cd_hi);
        let r3 = _mm256_unpackhi_epi16(ab_hi, cd_hi);
        let joined: [__m256i; 4] = [
            _mm256_permute2x128_si256::<0x20>(r0, r1),
            _mm256_permute2x128_si256::<0x20>(r2, r3),
            _mm256_permute2x128_si256::<0x31>(r0, r1),
            _mm256_permute2x128_si256::<0x31>(r2, r3),
        ];
        o.copy_from_slice(&bytemuck::cast::<[__m256i; 4], [u8; 128]>(joined));
    }
    32 * blocks
}

/// [`join_planes4`] in SSE2, 16 elements a step.
#[inline(always)]
fn join_planes4_sse2(p: [&[u8]; 4], out: &mut [u8]) -> usize {
    let blocks = p[0].len() / 16;
    for (k, o) in out.chunks_exact_mut(64).take(blocks).enumerate() {
        let at = 16 * k;
        let load = |plane: &[u8]| -> __m128i {
            let bytes: [u8; 16] = plane[at..at + 16].try_into().expect("16 bytes");
            bytemuck::cast(bytes)
        };
        let (a, b, c, d) = (load(p[0]), load(p[1]), load(p[2]), load(p[3]));
        // SAFETY: SSE2 is in the x86_64 baseline; registers only.
        let joined: [__m128i; 4] = unsafe {
            let (ab_lo, ab_hi) = (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
            let (cd_lo, cd_hi) = (_mm_unpacklo_epi8(c, d), _mm_unpackhi_epi8(c, d));
            [
                _mm_unpacklo_epi16(ab_lo, cd_lo),
                _mm_unpackhi_epi16(ab_lo, cd_lo),
                _mm_unpacklo_epi16(ab_hi, cd_hi),
                _mm_unpackhi_epi16(ab_hi, cd_hi),
            ]
        };
        o.copy_from_slice(&bytemuck::cast::<[__m128i; 4], [u8; 64]>(joined));
    }
    16 * blocks
}

/// The shared-positions remap undone four entries at a time (`CookedMesh::
/// shared_positions`): each entry `k` becomes `next - k`, where `next` counts the
/// zeros before it from `next` on, and a `k` above its `next` is flagged. Returns
/// the count after the entries done, whether one was flagged, and how many were
/// done (a multiple of four; the caller runs the rest). The running count is a
/// prefix sum of the zero lanes, so the loop has no chain through memory and no
/// branch; the same values as the scalar loop.
pub(crate) fn unremap(remap: &mut [u32], next: u32) -> (u32, bool, usize) {
    // SAFETY: SSE2 is in the x86_64 baseline; registers only.
    unsafe {
        let sign = _mm_set1_epi32(i32::MIN);
        let (mut base, mut bad) = (_mm_set1_epi32(next as i32), _mm_setzero_si128());
        let done = remap.len() / 4 * 4;
        for c in remap.chunks_exact_mut(4) {
            let k: __m128i = bytemuck::cast(<[u32; 4]>::try_from(&*c).expect("4 entries"));
            // -1 where the entry is a new position; its inclusive prefix sum is
            // minus the count of new positions up to and including each lane.
            let z = _mm_cmpeq_epi32(k, _mm_setzero_si128());
            let p = _mm_add_epi32(z, _mm_slli_si128::<4>(z));
            let p = _mm_add_epi32(p, _mm_slli_si128::<8>(p));
            // `next` before each lane: the base plus the new ones before it.
            let at = _mm_add_epi32(base, _mm_sub_epi32(z, p));
            // k > next, unsigned.
            let over = _mm_cmpgt_epi32(_mm_xor_si128(k, sign), _mm_xor_si128(at, sign));
            bad = _mm_or_si128(bad, over);
            c.copy_from_slice(&bytemuck::cast::<__m128i, [u32; 4]>(_mm_sub_epi32(at, k)));
            base = _mm_sub_epi32(base, _mm_shuffle_epi32::<0xFF>(p));
        }
        let next = bytemuck::cast::<__m128i, [u32; 4]>(base)[0];
        (next, _mm_movemask_epi8(bad) != 0, done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::{oct_code_scale, predicted_code};
    use crate::quant::{oct_decode_inv, oct_scale};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn unremap_gives_the_scalar_loop_values() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for case in 0..400 {
            let n = rng.random_range(0..40usize);
            let start = if case % 3 == 0 {
                rng.random()
            } else {
                rng.random_range(0..4)
            };
            let remap: Vec<u32> = (0..n)
                .map(|i| match rng.random_range(0..4) {
                    0 | 1 => 0,
                    2 => rng.random_range(0..=i as u32 + 1),
                    _ => rng.random(),
                })
                .collect();
            let (mut want, mut next, mut bad) = (remap.clone(), start, false);
            for r in &mut want {
                let k = *r;
                bad |= k > next;
                *r = next.wrapping_sub(k);
                next = next.wrapping_add(u32::from(k == 0));
            }
            let mut got = remap.clone();
            let (mut gnext, gbad, done) = unremap(&mut got, start);
            let mut gbad = gbad;
            for r in &mut got[done..] {
                let k = *r;
                gbad |= k > gnext;
                *r = gnext.wrapping_sub(k);
                gnext = gnext.wrapping_add(u32::from(k == 0));
            }
            assert_eq!((got, gnext, gbad), (want, next, bad), "case {case}");
        }
    }

    fn bits3(v: &[[f32; 3]]) -> Vec<[u32; 3]> {
        v.iter().map(|a| a.map(f32::to_bits)).collect()
    }

    #[test]
    fn normals_and_tangents_have_the_bits_of_the_portable_loops() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for nb in [2, 8, 12, 16] {
            let n = 4096;
            let max = (1i32 << (nb - 1)) - 1;
            let codes: Vec<[i16; 2]> = (0..n)
                .map(|i| match i % 3 {
                    // Any bits (residuals wrap), in-range codes, and the axes.
                    0 => [rng.random(), rng.random()],
                    1 => [0, 1].map(|_| rng.random_range(-max..=max) as i16),
                    _ => [[0, 0], [max as i16, 0], [0, -max as i16], [0, 0]][i % 4],
                })
                .collect();
            let sums: Vec<[f32; 4]> = (0..n)
                .map(|i| match i % 4 {
                    0 => [0.0; 4],
                    1 => [rng.random_range(-4.0..4.0), -0.0, 0.0, 0.0],
                    _ => [0, 1, 2]
                        .map(|_| rng.random_range(-1e9f32..1e9))
                        .into_iter()
                        .chain([0.0])
                        .collect::<Vec<_>>()
                        .try_into()
                        .unwrap(),
                })
                .collect();
            let positions: Vec<[u16; 4]> =
                (0..n).map(|_| [0, 0, 0, rng.random_range(0..2)]).collect();
            let (scale, inv) = (oct_code_scale(nb), 1.0 / oct_scale(nb));

            let mut fast = vec![[0.0; 3]; n];
            assert_eq!(predicted_normals(&codes, &sums, scale, inv, &mut fast), n);
            let slow: Vec<[f32; 3]> = codes
                .iter()
                .zip(&sums)
                .map(|(q, &s)| {
                    let p = predicted_code(s, scale);
                    oct_decode_inv([q[0].wrapping_add(p[0]), q[1].wrapping_add(p[1])], inv)
                })
                .collect();
            assert_eq!(bits3(&fast), bits3(&slow), "predicted normals at {nb} bits");

            let mut fast = vec![[0.0; 3]; n];
            assert_eq!(oct_decode_all(&codes, inv, &mut fast), n);
            let slow: Vec<[f32; 3]> = codes.iter().map(|&q| oct_decode_inv(q, inv)).collect();
            assert_eq!(bits3(&fast), bits3(&slow), "normals at {nb} bits");

            let mut fast = vec![[0.0; 4]; n];
            assert_eq!(tangents(&codes, &positions, inv, &mut fast), n);
            for ((t, &q), p) in fast.iter().zip(&codes).zip(&positions) {
                let d = oct_decode_inv(q, inv);
                let s = if p[3] & 1 != 0 { -1.0 } else { 1.0 };
                assert_eq!(t.map(f32::to_bits), [d[0], d[1], d[2], s].map(f32::to_bits));
            }
        }
    }

    #[test]
    fn restores_match_the_portable_parallelogram() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for i in 0..200_000 {
            let edge = [0, 1, 2, 32767, 32768, 65534, 65535];
            let p = |rng: &mut ChaCha8Rng| -> [u16; 4] {
                if i % 3 == 0 {
                    [0; 4].map(|_| edge[rng.random_range(0..edge.len())])
                } else {
                    [rng.random(), rng.random(), rng.random(), rng.random()]
                }
            };
            let (a, b, c, r) = (p(&mut rng), p(&mut rng), p(&mut rng), p(&mut rng));
            let w = rng.random_range(0..=8);
            let want = |n: usize| -> [u16; 4] {
                std::array::from_fn(|k| {
                    if k < n {
                        crate::coding::parallelogram(a[k], b[k], c[k], w).wrapping_add(r[k])
                    } else {
                        r[k]
                    }
                })
            };
            assert_eq!(
                restore::<3>(a, b, c, r, w),
                want(3),
                "{a:?} {b:?} {c:?} {r:?} {w}"
            );
            assert_eq!(
                restore::<2>(a, b, c, r, w),
                want(2),
                "{a:?} {b:?} {c:?} {r:?} {w}"
            );
        }
    }

    #[test]
    fn dequantised_positions_and_uvs_have_the_bits_of_the_portable_form() {
        use crate::quant::dequantize_unorm;
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for n in [0, 1, 2, 3, 7, 1000] {
            let q: Vec<[u16; 4]> = (0..n).map(|_| [0; 4].map(|_| rng.random())).collect();
            let uv: Vec<[u16; 2]> = (0..n).map(|_| [rng.random(), rng.random()]).collect();
            let min = [-3.7f32, 0.1, 1234.5];
            let step = 0.000_123_4f32;
            let mut fast = vec![[0.0f32; 3]; n];
            let done = dequantize_positions(&q, min, step, &mut fast);
            assert_eq!(done, n.saturating_sub(1));
            for (o, q) in fast.iter().zip(&q).take(done) {
                let want = [0, 1, 2].map(|k| dequantize_unorm(q[k], min[k], step));
                assert_eq!(o.map(f32::to_bits), want.map(f32::to_bits));
            }
            let (lo, st) = ([-0.5f32, 2.0], [0.001f32, 0.0003]);
            let mut fast = vec![[0.0f32; 2]; n];
            let done = dequantize_uvs(&uv, lo, st, &mut fast);
            assert_eq!(done, n / 2 * 2);
            for (o, q) in fast.iter().zip(&uv).take(done) {
                let want = [0, 1].map(|k| dequantize_unorm(q[k], lo[k], st[k]));
                assert_eq!(o.map(f32::to_bits), want.map(f32::to_bits));
            }
        }
    }

    #[test]
    fn face_normals_have_the_bits_of_the_portable_form() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for i in 0..100_000 {
            // Full-range codes, and small triangles (cancellation near zero).
            let p = |rng: &mut ChaCha8Rng| -> [u16; 4] {
                if i % 2 == 0 {
                    [
                        rng.random(),
                        rng.random(),
                        rng.random(),
                        rng.random_range(0..2),
                    ]
                } else {
                    [0; 4].map(|_| 30_000 + rng.random_range(0..4u16))
                }
            };
            let (a, b, c) = (p(&mut rng), p(&mut rng), p(&mut rng));
            let (f, g) = (
                face_normal(a, b, c),
                crate::predict::face_normal_portable(a, b, c),
            );
            assert_eq!(
                f.map(f32::to_bits),
                g.map(f32::to_bits),
                "{a:?} {b:?} {c:?}"
            );
        }
    }
}
