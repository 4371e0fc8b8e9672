//! Estimated decode time of a cooked record ([`crate::CookedMesh::estimated_decode_ns`]),
//! and the cook's use of it (feature `encode`): a stream can be stored several ways
//! (raw, meshopt, an entropy layer over either) and a set's body raw or as one zstd
//! frame; the smallest way is not always worth its decode time. Where a record's
//! estimate is over [`crate::CookConfig::decode_budget`], the cook trades bytes for
//! decode time, within [`crate::CookConfig::speed_growth`].
//!
//! The estimate is linear: per stream a fixed cost per call (a zstd frame's table
//! builds dominate small records) plus costs per stored and per decoded byte of its
//! codec, and per vertex and per triangle for the passes that do not depend on the
//! codings (the walk, the normal prediction, the dequantising passes, shared
//! positions). The coefficients are least-squares fits of the decoder's times per
//! stream and per pass (best of 100 decodes, one thread) over every record of the
//! corpus and its stress cases, cooked with and without the entropy layer and the
//! predictions, on the development machine (see BENCHMARKS.md). The cook never
//! times anything: its bytes are the same on every machine.

use crate::cooked::Codec;

/// Estimated ns to decode a stream of `decoded` bytes stored in `stored` bytes with
/// `codec` (`index`: the index stream, whose meshopt codec differs).
pub(crate) fn stream_ns(codec: Codec, index: bool, stored: usize, decoded: usize) -> f64 {
    let (s, d) = (stored as f64, decoded as f64);
    // (fixed, per stored byte, per decoded byte)
    let (c, a, b) = match (codec, index) {
        (Codec::Raw, _) => (60.0, 0.014, 0.014),
        (Codec::Meshopt, false) => (178.0, 0.13, 0.241),
        (Codec::Meshopt, true) => (98.0, 0.0, 0.299),
        (Codec::MeshoptZstd, false) => (2288.0, 1.996, 0.284),
        (Codec::MeshoptZstd, true) => (98.0, 2.067, 0.337),
        (Codec::PlanesZstd, _) => (1031.0, 1.755, 0.237),
        (Codec::Buckets, _) => (779.0, 0.139, 0.65),
        (Codec::BucketsZigzag, _) => (1118.0, 0.404, 0.718),
        (Codec::BucketsRanged, _) => (RANGED_NS.0, RANGED_NS.1, RANGED_NS.2),
        (Codec::BucketsRangedZigzag, _) => (RANGED_NS.0, RANGED_NS.1, RANGED_NS.2),
    };
    c + a * s + b * d
}

/// The range-coded bucket codecs' (fixed, per stored byte, per decoded byte) ns:
/// the four frequency tables' slot tables, then one rANS step per u16 value
/// (a serial chain) and the bit unpacking.
const RANGED_NS: (f64, f64, f64) = (2500.0, 0.0, 1.75);

#[cfg(feature = "encode")]
/// Estimated ns of one zstd frame of `stored` bytes that decodes to `decoded`.
pub(crate) fn zstd_frame_ns(stored: usize, decoded: usize) -> f64 {
    2500.0 + 3.5 * stored as f64 + 0.1 * decoded as f64
}

/// Estimated ns of the decode's passes that do not depend on how the streams are
/// coded, for a record of `n` vertices, `t` triangles and header `flags`: the index
/// check, the walk (restoring predicted positions, uvs and normals, summing face
/// normals), the normal prediction, the dequantising passes, and shared positions
/// (`remap`: the distinct positions, the remap's codec and stored bytes).
pub(crate) fn passes_ns(n: usize, t: usize, flags: u8, remap: Option<(usize, u8, usize)>) -> f64 {
    use crate::CookedHeader as H;
    let has = |f: u8| flags & f != 0;
    let (n, t) = (n as f64, t as f64);
    // The index check and the positions' dequantising.
    let mut ns = 0.46 * t + 1.89 * n;
    let walked = has(H::PREDICTED_POSITIONS) && remap.is_none()
        || has(H::PREDICTED_UVS)
        || has(H::PARALLELOGRAM_NORMALS);
    if walked {
        ns += 0.79 * t + 10.8 * n;
    }
    if has(H::HAS_NORMALS) && has(H::PREDICTED_NORMALS) {
        ns += 1.1 * t + 7.6 * n;
    }
    if has(H::HAS_TANGENTS) {
        ns += 1.63 * n;
    }
    if let Some((u, codec, stored)) = remap {
        // The remap's decode, the walk over the distinct positions.
        let codec = Codec::from_word(codec as u32).unwrap_or(Codec::Raw);
        ns += stream_ns(codec, true, stored, 4 * n as usize);
        if has(H::PREDICTED_POSITIONS) {
            ns += 7.2 * t + 10.0 * u as f64;
        }
    }
    ns
}

impl crate::CookedMesh<'_> {
    /// An estimate of the time [`Self::decode_into`] takes on one thread, in ns: a
    /// linear model of each stream's codec and of the passes over vertices and
    /// triangles, fitted on the development machine (see the module docs). For
    /// budgets (how much decoding a frame can afford), not a measurement.
    pub fn estimated_decode_ns(&self) -> f64 {
        let h = &self.header;
        let remap = (h.flags & crate::CookedHeader::SHARED_POSITIONS != 0).then_some((
            h.position_count as usize,
            h.remap_codec,
            h.remap_len as usize,
        ));
        let passes = passes_ns(
            h.vertex_count as usize,
            h.index_count as usize / 3,
            h.flags,
            remap,
        );
        passes + self.streams_ns()
    }

    /// The estimated decode time of the record's streams.
    pub(crate) fn streams_ns(&self) -> f64 {
        self.header
            .streams
            .iter()
            .enumerate()
            .filter(|(_, d)| d.decoded_len > 0)
            .map(|(i, d)| {
                let codec = Codec::from_word(d.codec).unwrap_or(Codec::Raw);
                stream_ns(codec, i == 4, d.stored_len as usize, d.decoded_len as usize)
            })
            .sum()
    }
}
