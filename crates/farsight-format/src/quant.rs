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
#[inline]
pub fn oct_decode(q: [i16; 2], bits: u32) -> [f32; 3] {
    // A multiply by the reciprocal rather than two divisions: in a loop over codes the
    // reciprocal is hoisted, and the divider is what bounds this function's
    // throughput. `s * (1 / s)` is exactly 1 in f32 for every `bits` in 2..=16, so
    // the axes still decode exactly.
    let inv = 1.0 / oct_scale(bits);
    let x = (q[0] as f32 * inv).clamp(-1.0, 1.0);
    let y = (q[1] as f32 * inv).clamp(-1.0, 1.0);
    let z = 1.0 - x.abs() - y.abs();
    let (x, y) = if z < 0.0 {
        (
            (1.0 - y.abs()) * sign_not_zero(x),
            (1.0 - x.abs()) * sign_not_zero(y),
        )
    } else {
        (x, y)
    };
    let inv = 1.0 / (x * x + y * y + z * z).sqrt();
    [x * inv, y * inv, z * inv]
}

/// Encodes a unit vector (need not be exactly normalised; a zero vector encodes +Z)
/// as an octahedral code of `bits` bits (2..=16), choosing among the four nearest
/// codes the one that decodes closest to `n`.
pub fn oct_encode(n: [f32; 3], bits: u32) -> [i16; 2] {
    debug_assert!((2..=16).contains(&bits));
    let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
    if len.is_nan() || len <= 0.0 || !len.is_finite() {
        return [0, 0];
    }
    let n = [n[0] / len, n[1] / len, n[2] / len];
    let p = oct_project(n);
    let s = oct_scale(bits);
    let (fx, fy) = ((p[0] * s).floor(), (p[1] * s).floor());
    let mut best = [0i16; 2];
    let mut best_err = f64::INFINITY;
    for (dx, dy) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)] {
        let q = [(fx + dx).clamp(-s, s) as i16, (fy + dy).clamp(-s, s) as i16];
        // Compare in f64: candidates differ by ~1e-9 in cosine at 16 bits, below
        // f32's resolution near 1, so use the squared sine (cross product) instead.
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
            best_err = err;
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
}
