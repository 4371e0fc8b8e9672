//! The small coding helpers the encoder and the decoders share: zigzag, the
//! damped parallelogram, and the zstd frame the cook writes. A leaf: it imports
//! nothing from the crate, so every codec module may use it.

/// The parallelogram prediction `a + b - c` leaned towards the midpoint of `a` and
/// `b` by `w` (0..=8): `((a + b)(8 + w) - 2 w c) / 16`, rounded down, clamped to the
/// code range. `w = 8` is exactly `a + b - c`, `w = 0` the midpoint. The x86_64
/// decoder computes it in SSE2 (`simd::restore`); the encoder, the tests and other
/// targets use this form.
#[cfg(any(feature = "encode", test, not(simd_x86)))]
#[inline(always)]
pub(crate) fn parallelogram(a: u16, b: u16, c: u16, w: i32) -> u16 {
    (((a as i32 + b as i32) * (8 + w) - 2 * w * c as i32) >> 4).clamp(0, 65535) as u16
}

/// Zigzag: small signed residuals become small unsigned numbers.
#[cfg(feature = "encode")]
#[inline]
pub(crate) fn zigzag(r: u16) -> u16 {
    let r = r as i16;
    ((r << 1) ^ (r >> 15)) as u16
}

/// Inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(z: u16) -> u16 {
    (z >> 1) ^ (0u16.wrapping_sub(z & 1))
}

/// Frames of fewer input bytes store their literals raw where that costs at most
/// 1/[`RAW_LITERALS_GROWTH`] more bytes. Measured on the frames the cook writes for
/// the corpus (`examples/zstd_frames.rs`, median ns per frame, Huffman against raw
/// literals): 555 against 270 at 64-256 bytes, 778 against 466 at 256-1,024, 2,304
/// against 1,736 at 1-4 KiB, while at 4-16 KiB raw literals were slower (6,256
/// against 7,714: the parser then takes more, shorter matches).
#[cfg(feature = "encode")]
pub(crate) const RAW_LITERALS_BELOW: usize = 4096;
#[cfg(feature = "encode")]
const RAW_LITERALS_GROWTH: usize = 16;

/// One zstd frame of `data` at `level` (matches of at least `min_match` bytes when
/// given). A small frame's decode is dominated by building its Huffman table for
/// the literals; where storing the literals raw costs few bytes, the frame does.
#[cfg(feature = "encode")]
pub(crate) fn zstd_frame(data: &[u8], level: i32, min_match: Option<u32>) -> Option<Vec<u8>> {
    use zstd::zstd_safe::{CParameter, ParamSwitch};
    let frame = |raw_literals: bool| -> Option<Vec<u8>> {
        let mut zc = zstd::bulk::Compressor::new(level).ok()?;
        if let Some(m) = min_match {
            zc.set_parameter(CParameter::MinMatch(m)).ok()?;
        }
        if raw_literals {
            zc.set_parameter(CParameter::LiteralCompressionMode(ParamSwitch::Disable))
                .ok()?;
        }
        zc.compress(data).ok()
    };
    let huffman = frame(false)?;
    if data.len() >= RAW_LITERALS_BELOW {
        return Some(huffman);
    }
    match frame(true) {
        Some(raw) if raw.len() <= huffman.len() + huffman.len() / RAW_LITERALS_GROWTH => Some(raw),
        _ => Some(huffman),
    }
}
