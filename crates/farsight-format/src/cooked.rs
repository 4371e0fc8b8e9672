//! Cooked mesh records (version 2; `docs/design/baked-buildings.md#the-full-and-cooked-files`): layout and parsing
//! (the decoder is `decode.rs`).
//!
//! ```text
//! CookedHeader        144 bytes: counts, bits, bounds, uv bounds, five StreamDescs
//! stream bytes        positions, normals, tangents, uvs, indices, back to back
//! ```
//!
//! | stream    | element (decoded)  | meaning                                            |
//! |-----------|--------------------|----------------------------------------------------|
//! | positions | `[u16; 4]`         | xyz cell codes on one cubic grid over the largest extent ([`max_extent`]); w bit 0: tangent handedness is -1 |
//! | normals   | `[i16; 2]`         | octahedral, `normal_bits` bits                      |
//! | tangents  | `[i16; 2]`         | octahedral direction, `tangent_bits` bits           |
//! | uvs       | `[u16; 2]`         | cell codes in the record's uv bounds, `uv_bits`     |
//! | indices   | `u32`              | triangle list                                       |
//!
//! Header flags say which streams hold prediction residuals instead of codes:
//! `PREDICTED_POSITIONS` and `PREDICTED_UVS` (zigzag residuals of a parallelogram walk
//! over the triangles; positions may lean towards the edge midpoint by the header's
//! `position_damping`, which the writer picks per record), `PREDICTED_NORMALS` (wrapping residuals against the geometric
//! normal of the quantised surface) or `PARALLELOGRAM_NORMALS` (zigzag residuals of
//! the same walk over the octahedral codes); see `predict.rs`. A non-zero `uv_axes`
//! byte (once reserved) says the uvs stream instead holds zigzag residuals against a
//! prediction from each vertex's own position (uvs that follow the positions, as a
//! terrain tile's do: residuals of a cell or so, where the walk's residuals repeat
//! every bit of the positions' own). With
//! `SHARED_POSITIONS` the positions stream holds the header's `position_count`
//! distinct positions (numbered as vertices first use them, predicted by the walk over
//! the triangles of positions) and a remap follows the five streams: one u32 per
//! vertex, 0 for the next new position or k for the one numbered k before it, stored
//! raw or as byte planes through zstd (`remap_codec`, `remap_len`). Predictions are exact integer
//! arithmetic, so decoding is a pure function of the bytes.
//!
//! Each stream is stored raw, meshopt-coded, meshopt-coded then zstd-compressed,
//! split into byte planes then zstd-compressed, or (vertex streams) split into bit
//! lengths through zstd and raw low bits (the bucket codecs, `buckets.rs`), whichever
//! is smallest (see [`Codec`]). Records written before the bucket codecs and
//! `position_damping` existed have neither (the byte was reserved and zero, which
//! means the plain parallelogram), so they read unchanged. UVs are quantised against their bounds rather than stored as half
//! floats because they are metres on a building and run to hundreds, where a half
//! float's step is centimetres (`docs/design/baked-buildings.md#the-full-and-cooked-files`).
//!
//! **Entropy layer: zstd.** Measured on the meshopt streams of bunny, pirate and
//! FlightHelmet (BENCHMARKS.md, "Container and mesh encodings"): zstd-19 takes them
//! 6-10 % smaller than lz4_flex, whose LZ matching alone finds little in meshopt
//! output that is already byte-packed. lz4_flex decodes 10-15x faster, but a cooked
//! file exists to be small and is decoded once, on an IO thread; so zstd.
//!
//! Allocation: every decoded size is declared in the header and checked against
//! [`MAX_EXPANSION`] times the stored size before anything is allocated; writers fall
//! back to a weaker codec for a stream that would exceed it.

use bytemuck::{Pod, Zeroable};

use crate::varint::Reader;
use crate::{FormatError, Section, Stream};

/// How a stream's bytes are coded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Codec {
    /// The decoded elements, little-endian.
    Raw = 0,
    /// meshoptimizer's vertex codec (vertex streams) or index codec (indices).
    Meshopt = 1,
    /// [`Codec::Meshopt`], then zstd.
    MeshoptZstd = 2,
    /// The decoded elements split into byte planes (every element's byte 0, then
    /// every byte 1, ...), then zstd. Wins on prediction residuals, where meshopt's
    /// delta to the previous vertex only adds noise.
    PlanesZstd = 3,
    /// Each u16 component split into its bit length, zstd-compressed, and the bits
    /// below its leading one, packed raw (see `buckets.rs`). Wins on wide prediction
    /// residuals, whose low bits are noise that byte coders pay more than a bit for.
    Buckets = 4,
    /// [`Codec::Buckets`] of the zigzagged components (for wrapping signed residuals).
    BucketsZigzag = 5,
    /// [`Codec::Buckets`] with each bucket and the bit below its leading one
    /// range-coded (rANS) under a frequency table per component instead of zstd:
    /// wins on wide noisy residuals, whose buckets zstd codes above their entropy
    /// and whose next bit is skewed.
    BucketsRanged = 6,
    /// [`Codec::BucketsRanged`] of the zigzagged components.
    BucketsRangedZigzag = 7,
}

impl Codec {
    pub(crate) fn from_word(w: u32) -> Option<Self> {
        match w {
            0 => Some(Codec::Raw),
            1 => Some(Codec::Meshopt),
            2 => Some(Codec::MeshoptZstd),
            3 => Some(Codec::PlanesZstd),
            4 => Some(Codec::Buckets),
            5 => Some(Codec::BucketsZigzag),
            6 => Some(Codec::BucketsRanged),
            7 => Some(Codec::BucketsRangedZigzag),
            _ => None,
        }
    }
}

/// The most a stream may decode to per stored byte (plus [`EXPANSION_SLACK`]).
pub const MAX_EXPANSION: u64 = 1024;
/// Bytes a stream may decode to beyond `MAX_EXPANSION * stored`.
pub const EXPANSION_SLACK: u64 = 4096;

/// One stream's coding and sizes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct StreamDesc {
    /// A [`Codec`] value.
    pub codec: u32,
    /// Bytes stored in the record.
    pub stored_len: u32,
    /// Bytes after the entropy layer: the meshopt-coded size for `MeshoptZstd`, the
    /// decoded size for `PlanesZstd`, the bucket count (u16 components) for the bucket
    /// codecs, `stored_len` otherwise.
    pub coded_len: u32,
    /// Bytes after all decoding: element count times element size.
    pub decoded_len: u32,
}

/// Stream order in [`CookedHeader::streams`].
pub const STREAMS: [Stream; 5] = [
    Stream::Positions,
    Stream::Normals,
    Stream::Tangents,
    Stream::Uvs,
    Stream::Indices,
];

/// Header of a cooked mesh record.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct CookedHeader {
    /// Vertices in the record.
    pub vertex_count: u32,
    /// Indices in the record (three per triangle).
    pub index_count: u32,
    /// Bits per position component (1..=16).
    pub position_bits: u8,
    /// Bits per uv component (1..=16).
    pub uv_bits: u8,
    /// Bits per octahedral component of normals and tangents (2..=16).
    pub normal_bits: u8,
    /// [`CookedHeader::HAS_NORMALS`] | `HAS_TANGENTS` | `HAS_UVS`.
    pub flags: u8,
    /// Bits per octahedral component of tangents (2..=16).
    pub tangent_bits: u8,
    /// How far position predictions lean from the parallelogram towards the edge
    /// midpoint, 0..=8: the prediction is `((a + b)(8 + w) - 2 w c) / 16` with
    /// `w = 8 - position_damping`, so 0 is the parallelogram `a + b - c` and 8 the
    /// midpoint. Scanned surfaces, whose vertices carry noise, compress better a little
    /// damped; the writer picks the value that stores smallest.
    pub position_damping: u8,
    /// With [`CookedHeader::SHARED_POSITIONS`]: the codec of the position remap
    /// ([`Codec::Raw`] or [`Codec::PlanesZstd`]); zero otherwise.
    pub remap_codec: u8,
    /// Uvs predicted from positions: non-zero, the uvs stream holds zigzag residuals
    /// against a prediction from each vertex's own position code. Per uv component
    /// three bits (u in bits 0-2, v in bits 3-5, bits 6-7 zero): the low two the
    /// position axis it follows plus one (0: that component is predicted as 0), the
    /// third set where the uv decreases as the position grows. The map takes the
    /// record's position bounds on that axis to its uv bounds, so the header holds it
    /// (a terrain tile, a planar-mapped wall). Never with
    /// [`CookedHeader::PREDICTED_UVS`]; records written before it have 0 here (the
    /// byte was reserved) and read unchanged.
    pub uv_axes: u8,
    /// The record's bounds: the box a loader keeping no CPU copy still knows.
    pub bounds_min: [f32; 3],
    /// The bounds' maximum corner (positions are quantised over the largest extent from `bounds_min`).
    pub bounds_max: [f32; 3],
    /// The uvs' minimum (each component quantised from here to `uv_max`).
    pub uv_min: [f32; 2],
    /// The uvs' maximum.
    pub uv_max: [f32; 2],
    /// Where each stream lies and how it is coded: positions, normals, tangents, uvs, indices.
    pub streams: [StreamDesc; 5],
    /// With [`CookedHeader::SHARED_POSITIONS`]: the distinct positions the positions
    /// stream holds, and the remap's stored bytes; zero otherwise.
    pub position_count: u32,
    /// With [`CookedHeader::SHARED_POSITIONS`]: the remap's stored bytes; zero otherwise.
    pub remap_len: u32,
}
const _: () = assert!(std::mem::size_of::<CookedHeader>() == 144);

impl CookedHeader {
    /// The record has normals (a normals stream).
    pub const HAS_NORMALS: u8 = 1;
    /// The record has tangents (a tangents stream).
    pub const HAS_TANGENTS: u8 = 2;
    /// The record has uvs (a uvs stream).
    pub const HAS_UVS: u8 = 4;
    /// The normals stream holds residuals against the geometric normal prediction.
    pub const PREDICTED_NORMALS: u8 = 8;
    /// The positions stream holds zigzag residuals of the parallelogram walk.
    pub const PREDICTED_POSITIONS: u8 = 16;
    /// The uvs stream holds zigzag residuals of the same parallelogram walk.
    pub const PREDICTED_UVS: u8 = 32;
    /// The normals stream holds zigzag residuals of the same parallelogram walk over
    /// the octahedral codes (smooth normals that are not the surface's own, such as
    /// authored or analytic ones); never with [`Self::PREDICTED_NORMALS`].
    pub const PARALLELOGRAM_NORMALS: u8 = 64;
    /// Vertices share positions: the positions stream holds `position_count`
    /// distinct positions (predicted by the walk over the triangles of positions),
    /// and a remap after the five streams gives each vertex its position (see
    /// `FORMAT.md` §3.4). Exporters that split every face or quad
    /// (flat shading, uv islands) repeat one position on many vertices.
    pub const SHARED_POSITIONS: u8 = 128;

    /// Element size and count of each stream under this header's flags.
    pub fn expected_decoded_len(&self) -> [u64; 5] {
        let n = self.vertex_count as u64;
        let has = |f| if self.flags & f != 0 { n * 4 } else { 0 };
        let positions = if self.flags & Self::SHARED_POSITIONS != 0 {
            self.position_count as u64
        } else {
            n
        };
        [
            positions * 8,
            has(Self::HAS_NORMALS),
            has(Self::HAS_TANGENTS),
            has(Self::HAS_UVS),
            self.index_count as u64 * 4,
        ]
    }
}

/// A cooked record, validated and split into its streams.
#[derive(Clone, Copy, Debug)]
pub struct CookedMesh<'a> {
    /// The record's header.
    pub header: CookedHeader,
    /// Each stream's stored bytes, in header order (empty where the record has no such stream).
    pub streams: [&'a [u8]; 5],
    /// The position remap's stored bytes ([`CookedHeader::SHARED_POSITIONS`]), or
    /// empty.
    pub remap: &'a [u8],
}

/// A cooked header's own fields: bit counts, flags, damping, uv axes, the remap's
/// fields, the index count and the bounds (the first step of parsing a record).
fn check_header_fields(h: &CookedHeader) -> Result<(), FormatError> {
    if !(1..=16).contains(&h.position_bits) {
        return Err(bad("position_bits", h.position_bits as u64));
    }
    if !(1..=16).contains(&h.uv_bits) {
        return Err(bad("uv_bits", h.uv_bits as u64));
    }
    if !(2..=16).contains(&h.normal_bits) {
        return Err(bad("normal_bits", h.normal_bits as u64));
    }
    check_flags(h.flags)?;
    if !(2..=16).contains(&h.tangent_bits) {
        return Err(bad("tangent_bits", h.tangent_bits as u64));
    }
    if h.position_damping > 8 {
        return Err(bad("position_damping", h.position_damping as u64));
    }
    let shared = h.flags & CookedHeader::SHARED_POSITIONS != 0;
    check_uv_axes(h.uv_axes, h.flags)?;
    if !shared && (h.remap_codec, h.position_count, h.remap_len) != (0, 0, 0) {
        return Err(FormatError::NonZeroPadding {
            section: Section::RecordHeader,
            offset: 13,
        });
    }
    if shared {
        // Every vertex draws one of the positions, and there is one at least.
        if h.position_count > h.vertex_count || (h.position_count == 0) != (h.vertex_count == 0) {
            return Err(bad("position_count", h.position_count as u64));
        }
        let (stored, decoded) = (h.remap_len as u64, 4 * h.vertex_count as u64);
        let ok = match h.remap_codec {
            c if c == Codec::Raw as u8 => stored == decoded,
            c if c == Codec::PlanesZstd as u8 => {
                (stored > 0) == (decoded > 0) && decoded <= MAX_EXPANSION * stored + EXPANSION_SLACK
            }
            c => return Err(bad("remap_codec", c as u64)),
        };
        if !ok {
            return Err(bad("remap_len", stored));
        }
    }
    if h.index_count % 3 != 0 {
        return Err(bad("index_count", h.index_count as u64));
    }
    let floats = h
        .bounds_min
        .iter()
        .chain(&h.bounds_max)
        .chain(&h.uv_min)
        .chain(&h.uv_max);
    if floats.clone().any(|f| !f.is_finite()) {
        return Err(FormatError::NonFinite {
            what: "cooked mesh bounds",
        });
    }
    if (0..3).any(|i| h.bounds_min[i] > h.bounds_max[i])
        || (0..2).any(|i| h.uv_min[i] > h.uv_max[i])
    {
        return Err(bad("bounds", 0));
    }
    Ok(())
}

/// Stream `i`'s descriptor: a known codec, the decoded length its header implies
/// (`expected`), lengths that agree with the codec and stay within the expansion
/// bound. Returns the stream's section and stored length.
fn check_stream(i: usize, d: &StreamDesc, expected: u64) -> Result<(Section, u64), FormatError> {
    let stream = STREAMS[i];
    let section = Section::Stream(stream);
    let codec = Codec::from_word(d.codec).ok_or(FormatError::BadField {
        section,
        field: "codec",
        found: d.codec as u64,
    })?;
    if d.decoded_len as u64 != expected {
        return Err(FormatError::BadField {
            section,
            field: "decoded_len",
            found: d.decoded_len as u64,
        });
    }
    let (stored, coded, decoded) = (
        d.stored_len as u64,
        d.coded_len as u64,
        d.decoded_len as u64,
    );
    let consistent = match codec {
        Codec::Raw => stored == decoded && coded == stored,
        Codec::Meshopt => coded == stored && (decoded == 0) == (stored == 0),
        Codec::MeshoptZstd => stored > 0 && coded > 0 && decoded > 0,
        Codec::PlanesZstd => stored > 0 && coded == decoded && decoded > 0,
        // coded_len counts the buckets: one per u16 component.
        // Vertex streams only.
        Codec::Buckets
        | Codec::BucketsZigzag
        | Codec::BucketsRanged
        | Codec::BucketsRangedZigzag => {
            stream != Stream::Indices && stored >= 4 && decoded > 0 && coded * 2 == decoded
        }
    };
    if !consistent {
        return Err(FormatError::BadField {
            section,
            field: "stream lengths",
            found: stored,
        });
    }
    let limit = MAX_EXPANSION * stored + EXPANSION_SLACK;
    if decoded > limit || coded > limit || coded > 2 * decoded + EXPANSION_SLACK {
        return Err(FormatError::ExpansionTooLarge {
            stream,
            decoded: decoded.max(coded),
            stored,
            limit,
        });
    }
    Ok((section, stored))
}

/// Every bit of the flags has a meaning; the walk's normal prediction needs normals
/// and excludes the geometric one.
fn check_flags(flags: u8) -> Result<(), FormatError> {
    let walked = flags & CookedHeader::PARALLELOGRAM_NORMALS != 0;
    let normals = flags & (CookedHeader::PREDICTED_NORMALS | CookedHeader::HAS_NORMALS);
    if walked && normals != CookedHeader::HAS_NORMALS {
        return Err(bad("flags", flags as u64));
    }
    Ok(())
}

/// `uv_axes` names axes in its six low bits only, and only for a record with uvs
/// that are not walked.
fn check_uv_axes(uv_axes: u8, flags: u8) -> Result<(), FormatError> {
    let walked = flags & CookedHeader::PREDICTED_UVS != 0;
    let uvs = flags & CookedHeader::HAS_UVS != 0;
    if uv_axes & 0xC0 != 0 || uv_axes != 0 && (walked || !uvs) {
        return Err(bad("uv_axes", uv_axes as u64));
    }
    Ok(())
}

fn bad(field: &'static str, found: u64) -> FormatError {
    FormatError::BadField {
        section: Section::RecordHeader,
        field,
        found,
    }
}

impl<'a> CookedMesh<'a> {
    /// Checks the header and every stream length; decodes nothing.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        const HS: usize = std::mem::size_of::<CookedHeader>();
        if bytes.len() < HS {
            return Err(FormatError::Truncated {
                section: Section::RecordHeader,
                needed: HS as u64,
                available: bytes.len() as u64,
            });
        }
        let h: CookedHeader = bytemuck::pod_read_unaligned(&bytes[..HS]);
        Self::with_header(h, bytes, HS)
    }

    /// Checks header `h` and splits `bytes[at..]` into its streams (which must
    /// fill it exactly).
    fn with_header(h: CookedHeader, bytes: &'a [u8], at: usize) -> Result<Self, FormatError> {
        check_header_fields(&h)?;
        let expected = h.expected_decoded_len();
        let mut at = at;
        let mut streams: [&[u8]; 5] = [&[]; 5];
        for (i, d) in h.streams.iter().enumerate() {
            let (section, stored) = check_stream(i, d, expected[i])?;
            let left = (bytes.len() - at) as u64;
            if stored > left {
                return Err(FormatError::LengthPastEnd {
                    section,
                    length: stored,
                    available: left,
                });
            }
            streams[i] = &bytes[at..at + stored as usize];
            at += stored as usize;
        }
        let left = (bytes.len() - at) as u64;
        if h.remap_len as u64 > left {
            return Err(FormatError::LengthPastEnd {
                section: Section::Stream(Stream::Positions),
                length: h.remap_len as u64,
                available: left,
            });
        }
        let remap = &bytes[at..at + h.remap_len as usize];
        at += remap.len();
        if at != bytes.len() {
            return Err(FormatError::BadField {
                section: Section::RecordHeader,
                field: "trailing bytes in record",
                found: (bytes.len() - at) as u64,
            });
        }
        Ok(Self {
            header: h,
            streams,
            remap,
        })
    }

    /// Triangles in the record.
    pub fn triangle_count(&self) -> u32 {
        self.header.index_count / 3
    }

    /// Parses a record in the compact form cooked sets store (see
    /// [`compact_record`]): the header rebuilt, then every check of [`Self::parse`].
    pub fn parse_compact(bytes: &'a [u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes, Section::RecordHeader);
        let mut h = CookedHeader::zeroed();
        h.vertex_count = r.varint("vertex_count")?;
        h.index_count = r.varint("index_count")?;
        let b = r.take(6)?;
        (h.position_bits, h.uv_bits, h.normal_bits, h.flags) = (b[0], b[1], b[2], b[3]);
        (h.tangent_bits, h.position_damping) = (b[4], b[5]);
        // The damping's high bit: `uv_axes` follows (absent, it is 0).
        if h.position_damping & COMPACT_UV_AXES != 0 {
            h.position_damping &= !COMPACT_UV_AXES;
            h.uv_axes = r.byte()?;
            if h.uv_axes == 0 {
                return Err(bad("uv_axes", 0));
            }
        }
        check_flags(h.flags)?;
        for v in h.bounds_min.iter_mut().chain(&mut h.bounds_max) {
            *v = r.f32()?;
        }
        if h.flags & CookedHeader::HAS_UVS != 0 {
            for v in h.uv_min.iter_mut().chain(&mut h.uv_max) {
                *v = r.f32()?;
            }
        }
        if h.flags & CookedHeader::SHARED_POSITIONS != 0 {
            h.position_count = r.varint("position_count")?;
            h.remap_codec = r.byte()?;
            h.remap_len = r.varint("remap_len")?;
        }
        let expected = h.expected_decoded_len();
        for (i, d) in h.streams.iter_mut().enumerate() {
            if !compact_has_stream(i, h.flags) {
                continue;
            }
            d.codec = r.byte()? as u32;
            d.stored_len = r.varint("stored_len")?;
            d.decoded_len =
                u32::try_from(expected[i]).map_err(|_| bad("vertex_count", expected[i]))?;
            d.coded_len = match Codec::from_word(d.codec) {
                Some(Codec::MeshoptZstd) => r.varint("coded_len")?,
                Some(Codec::PlanesZstd) => d.decoded_len,
                Some(
                    Codec::Buckets
                    | Codec::BucketsZigzag
                    | Codec::BucketsRanged
                    | Codec::BucketsRangedZigzag,
                ) => d.decoded_len / 2,
                _ => d.stored_len,
            };
        }
        Self::with_header(h, bytes, r.at)
    }
}

/// In the compact form, set in the `position_damping` byte (whose values are 0..=8)
/// when a `uv_axes` byte follows the six bit and flag bytes.
const COMPACT_UV_AXES: u8 = 0x80;

/// Whether the compact form stores stream `i`'s description: positions and indices
/// always, the others where the flags say the record has them.
fn compact_has_stream(i: usize, flags: u8) -> bool {
    match i {
        1 => flags & CookedHeader::HAS_NORMALS != 0,
        2 => flags & CookedHeader::HAS_TANGENTS != 0,
        3 => flags & CookedHeader::HAS_UVS != 0,
        _ => true,
    }
}

/// `full` (a cooked record without its entropy layer) with every meshopt-coded
/// vertex stream stored raw instead (indices keep their codec): inside one zstd
/// frame over many small records, raw elements compress better than meshopt's
/// byte groups and per-stream tails. `None` when nothing changes.
#[cfg(feature = "encode")]
pub fn raw_vertex_streams(full: &[u8]) -> Result<Option<Vec<u8>>, FormatError> {
    let m = CookedMesh::parse(full)?;
    let mut h = m.header;
    let n = h.vertex_count as usize;
    let mut streams: Vec<Vec<u8>> = m.streams.iter().map(|s| s.to_vec()).collect();
    let mut changed = false;
    for i in 0..4 {
        let d = &mut h.streams[i];
        if d.codec != Codec::Meshopt as u32 || d.decoded_len == 0 {
            continue;
        }
        let err = |_| FormatError::StreamDecode {
            stream: STREAMS[i],
            codec: "meshopt",
        };
        let raw: Vec<u8> = if i == 0 {
            let n = (d.decoded_len / 8) as usize;
            let v = meshopt::decode_vertex_buffer::<[u16; 4]>(m.streams[i], n).map_err(err)?;
            bytemuck::cast_slice(&v).to_vec()
        } else {
            let v = meshopt::decode_vertex_buffer::<[u16; 2]>(m.streams[i], n).map_err(err)?;
            bytemuck::cast_slice(&v).to_vec()
        };
        *d = StreamDesc {
            codec: Codec::Raw as u32,
            stored_len: raw.len() as u32,
            coded_len: raw.len() as u32,
            decoded_len: raw.len() as u32,
        };
        streams[i] = raw;
        changed = true;
    }
    if !changed {
        return Ok(None);
    }
    let mut out = bytemuck::bytes_of(&h).to_vec();
    for s in &streams {
        out.extend_from_slice(s);
    }
    out.extend_from_slice(m.remap);
    Ok(Some(out))
}

/// A cooked record (as [`crate::cook_mesh`] writes it) in the compact form of
/// cooked sets: the 144-byte header as varint counts, the six bit and flag bytes
/// (then `uv_axes` where it is not 0, which the damping byte's high bit says),
/// the bounds, uv bounds only where the record has uvs, and per stream it has a
/// codec byte and varint lengths (the lengths the counts and codec imply are left
/// out); then the streams unchanged. `None` when the header holds something the
/// compact form cannot say (an absent stream with a non-empty description, uv
/// bounds without uvs): the caller keeps the full form.
#[cfg(feature = "encode")]
pub fn compact_record(full: &[u8]) -> Result<Option<Vec<u8>>, FormatError> {
    let m = CookedMesh::parse(full)?;
    let h = &m.header;
    let mut out = Vec::with_capacity(full.len());
    crate::varint::put(&mut out, h.vertex_count);
    crate::varint::put(&mut out, h.index_count);
    out.extend_from_slice(&[
        h.position_bits,
        h.uv_bits,
        h.normal_bits,
        h.flags,
        h.tangent_bits,
        h.position_damping | if h.uv_axes != 0 { COMPACT_UV_AXES } else { 0 },
    ]);
    if h.uv_axes != 0 {
        out.push(h.uv_axes);
    }
    for v in h.bounds_min.iter().chain(&h.bounds_max) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let has_uvs = h.flags & CookedHeader::HAS_UVS != 0;
    if has_uvs {
        for v in h.uv_min.iter().chain(&h.uv_max) {
            out.extend_from_slice(&v.to_le_bytes());
        }
    } else if h.uv_min != [0.0; 2] || h.uv_max != [0.0; 2] {
        return Ok(None);
    }
    if h.flags & CookedHeader::SHARED_POSITIONS != 0 {
        crate::varint::put(&mut out, h.position_count);
        out.push(h.remap_codec);
        crate::varint::put(&mut out, h.remap_len);
    }
    for (i, d) in h.streams.iter().enumerate() {
        if !compact_has_stream(i, h.flags) {
            if *d != StreamDesc::zeroed() {
                return Ok(None);
            }
            continue;
        }
        out.push(d.codec as u8);
        crate::varint::put(&mut out, d.stored_len);
        if d.codec == Codec::MeshoptZstd as u32 {
            crate::varint::put(&mut out, d.coded_len);
        }
    }
    for s in m.streams {
        out.extend_from_slice(s);
    }
    out.extend_from_slice(m.remap);
    // The compact form must read back to the same record.
    let back = CookedMesh::parse_compact(&out)?;
    if back.header != m.header {
        return Ok(None);
    }
    Ok(Some(out))
}

/// The largest extent of a box: positions are quantised on a cubic grid of
/// `max_extent / 2^bits` cells from `bounds_min` (as gltfpack does), so every axis has
/// the same step and the error is at most `max_extent / 2^(bits + 1)` on each axis.
pub fn max_extent(min: [f32; 3], max: [f32; 3]) -> f32 {
    (max[0] - min[0]).max(max[1] - min[1]).max(max[2] - min[2])
}

/// Splits elements of `elem` bytes into byte planes.
#[cfg(feature = "encode")]
pub(crate) fn split_planes(raw: &[u8], elem: usize) -> Vec<u8> {
    let n = raw.len() / elem;
    let mut out = vec![0u8; raw.len()];
    for (i, e) in raw.chunks_exact(elem).enumerate() {
        for (b, &byte) in e.iter().enumerate() {
            out[b * n + i] = byte;
        }
    }
    out
}

/// [`join_planes`] for `N`-byte elements, `n` of them: the planes as `N` slices of
/// `n` bytes, so the loop reads them without a bounds check per byte.
#[inline(always)]
fn join_planes_n<const N: usize>(planes: &[u8], out: &mut [u8], n: usize) {
    let p: [&[u8]; N] = std::array::from_fn(|b| &planes[b * n..(b + 1) * n]);
    for (i, o) in out.chunks_exact_mut(N).enumerate().take(n) {
        let e: [u8; N] = std::array::from_fn(|b| p[b][i]);
        o.copy_from_slice(&e);
    }
}

/// Inverse of [`split_planes`]; `planes.len() == out.len()` (checked by parse).
pub(crate) fn join_planes(planes: &[u8], out: &mut [u8], elem: usize) {
    let n = out.len() / elem;
    if planes.len() == out.len() {
        // The element sizes of the streams (indices and 4-byte vertex streams,
        // 8-byte positions), with every plane's bounds known to the loop.
        match elem {
            #[cfg(simd_x86)]
            4 => {
                let p: [&[u8]; 4] = std::array::from_fn(|b| &planes[b * n..(b + 1) * n]);
                let done = crate::simd::join_planes4(p, out);
                for (i, o) in out.chunks_exact_mut(4).enumerate().skip(done) {
                    o.copy_from_slice(&[p[0][i], p[1][i], p[2][i], p[3][i]]);
                }
                return;
            }
            #[cfg(not(simd_x86))]
            4 => return join_planes_n::<4>(planes, out, n),
            8 => return join_planes_n::<8>(planes, out, n),
            _ => {}
        }
    }
    for (i, e) in out.chunks_exact_mut(elem).enumerate() {
        for (b, byte) in e.iter_mut().enumerate() {
            *byte = planes[b * n + i];
        }
    }
}

#[cfg(all(test, feature = "encode"))]
mod tests {
    use super::{join_planes, split_planes};

    #[test]
    fn joined_planes_are_the_split_elements_for_every_element_size() {
        for elem in [2usize, 4, 8, 12] {
            for n in [0usize, 1, 3, 17, 53, 100, 256] {
                let raw: Vec<u8> = (0..n * elem).map(|i| (i * 7 + elem) as u8).collect();
                let planes = split_planes(&raw, elem);
                let mut out = vec![0xAA; raw.len()];
                join_planes(&planes, &mut out, elem);
                assert_eq!(out, raw, "{n} elements of {elem} bytes");
            }
        }
    }
}
