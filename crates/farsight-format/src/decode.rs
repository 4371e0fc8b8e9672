//! Decoding a cooked record into what a renderer uploads (f32 positions, unit normals,
//! tangents with handedness, f32 uvs, u32 indices), stage by stage into buffers that
//! live in [`DecodeScratch`] and the caller's [`MeshData`], so a loader decoding record
//! after record allocates nothing once its buffers have grown, and an output array
//! the size of the last record's is overwritten without a zero fill first.
//!
//! Stages: the entropy layer (zstd, or the bucket codec) per stream, meshopt's index
//! and vertex decoders straight into the reused buffers, one walk over the triangles
//! that turns position and uv residuals back into codes and sums the face normals as
//! it goes ([`unpredict`]; first-use order makes "visited" a comparison), then one
//! dequantising pass per attribute, the normals' adding the normal prediction. On
//! x86_64 the whole decode is compiled for SSE2, AVX2 and AVX-512 and the best the
//! CPU runs is chosen at run time (`simd.rs`); the face normals and the parallelogram
//! restore run as SSE2 in every tier, and the per-vertex passes too in the SSE2 tier
//! (in the wide tiers LLVM vectorises the portable loops wider). Every tier gives the
//! same bits.

use bytemuck::Pod;

#[cfg(not(simd_x86))]
use crate::buckets;
use crate::cooked::STREAMS;
use crate::cooked::{join_planes, max_extent, Codec, CookedHeader, CookedMesh, StreamDesc};
use crate::meshopt_into;
use crate::predict::{normal_sums, oct_code_scale, predicted_code, UvFromPositions};
use crate::quant::{dequantize_unorm, oct_decode_inv, oct_scale, unorm_step};
use crate::unwalk::unpredict;
use crate::walk::WalkScratch;
use crate::{FormatError, MeshData, Stream};

#[cfg(simd_x86)]
mod tiers;

/// Buffers a decoder reuses between records: the entropy layer's output, the quantised
/// streams, the walk's tables and the zstd context.
#[derive(Default)]
pub struct DecodeScratch {
    bytes: Vec<u8>,
    positions: Vec<[u16; 4]>,
    normals: Vec<[i16; 2]>,
    tangents: Vec<[i16; 2]>,
    uvs: Vec<[u16; 2]>,
    sums: Vec<[f32; 4]>,
    walk: WalkScratch,
    /// Shared positions: each vertex's position id, the triangles over positions
    /// and the distinct positions.
    remap: Vec<u32>,
    position_indices: Vec<u32>,
    shared: Vec<[u16; 4]>,
    pub(crate) zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// A cooked set's body once its zstd frame is undone.
    pub(crate) set_body: Vec<u8>,
}

impl std::fmt::Debug for DecodeScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DecodeScratch({} bytes)", self.bytes.capacity())
    }
}

/// Sets `v` to `n` elements without touching the ones it keeps (every caller
/// overwrites them all).
fn set_len<T: Pod>(v: &mut Vec<T>, n: usize) {
    v.truncate(n);
    v.resize(n, T::zeroed());
}

/// The reused zstd context, made on first use.
pub(crate) fn zstd_context<'z>(
    zstd: &'z mut Option<zstd::bulk::Decompressor<'static>>,
) -> std::io::Result<&'z mut zstd::bulk::Decompressor<'static>> {
    if zstd.is_none() {
        *zstd = Some(zstd::bulk::Decompressor::new()?);
    }
    Ok(zstd.as_mut().expect("set above"))
}

/// The stream's meshopt-coded, raw or planar bytes: undoes the entropy layer.
fn entropy<'s>(
    i: usize,
    d: &StreamDesc,
    stored: &'s [u8],
    buf: &'s mut Vec<u8>,
    zstd: &mut Option<zstd::bulk::Decompressor<'static>>,
) -> Result<&'s [u8], FormatError> {
    if d.codec != Codec::MeshoptZstd as u32 && d.codec != Codec::PlanesZstd as u32 {
        return Ok(stored);
    }
    let err = || FormatError::StreamDecode {
        stream: STREAMS[i],
        codec: "zstd",
    };
    buf.clear();
    // parse() bounded coded_len by MAX_EXPANSION times the stored bytes.
    buf.reserve(d.coded_len as usize);
    let z = zstd_context(zstd).map_err(|_| err())?;
    let got = z.decompress_to_buffer(stored, buf).map_err(|_| err())?;
    if got != d.coded_len as usize {
        return Err(err());
    }
    Ok(&buf[..])
}

/// Which tables the decoder's walk restores from residuals (positions, uvs, normals
/// by the parallelogram), and whether the normals are residuals against the face
/// normals it sums.
#[derive(Clone, Copy)]
struct Walk {
    positions: bool,
    uvs: bool,
    predicted_normals: bool,
    parallelogram_normals: bool,
}

impl CookedMesh<'_> {
    /// Decodes into `out` (cleared first, capacity kept): f32 positions, unit normals,
    /// tangents with handedness, f32 uvs and u32 indices, i.e. what a renderer uploads.
    /// `scratch` holds every intermediate buffer between calls; once both have grown
    /// to the largest record, decoding allocates nothing. On an error `out` is left
    /// empty.
    pub fn decode_into(
        &self,
        out: &mut MeshData,
        scratch: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        // The stages compiled for the best instruction set the CPU has (checked at
        // run time; see `simd::stages`): the same operations, so the same bits.
        #[cfg(simd_x86)]
        let result = tiers::stages(crate::simd::Tier::detect(), self, out, scratch);
        #[cfg(not(simd_x86))]
        let result = self.stages::<false>(out, scratch);
        if result.is_err() {
            out.clear();
        }
        result
    }

    /// [`Self::decode_into`]'s stages. Every array of `out` is set to its length and
    /// overwritten whole rather than cleared and refilled, so decoding a record the
    /// size of the last one writes each byte once (no zero fill first). `WIDE`:
    /// compiled for AVX2 or wider, where the portable per-vertex loops vectorise
    /// better than the 4-lane SSE2 forms.
    ///
    /// Phases, each inlined here (so each runs the instruction set of the tier that
    /// compiled this): the streams the walk needs ([`Self::walk_inputs`]), the walk
    /// and the uvs from positions ([`Self::restore_codes`]), then one dequantising
    /// pass per attribute.
    #[inline(always)]
    pub(crate) fn stages<const WIDE: bool>(
        &self,
        out: &mut MeshData,
        scratch: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        out.provenance.clear();
        let n = self.header.vertex_count as usize;
        let walk = self.walk_inputs::<WIDE>(out, scratch)?;
        self.restore_codes(walk, &out.indices, scratch);
        self.positions_out::<WIDE>(&scratch.positions[..n], out);
        self.normals_out::<WIDE>(walk.parallelogram_normals, out, scratch)?;
        self.tangents_out::<WIDE>(out, scratch)?;
        self.uvs_out::<WIDE>(out, scratch);
        Ok(())
    }

    /// The indices (checked against the vertex count), the positions (shared
    /// positions restored to each vertex's already), the uvs and the normals the
    /// walk restores, each table with its zero element at `n`; says which tables
    /// the walk restores.
    #[inline(always)]
    fn walk_inputs<const WIDE: bool>(
        &self,
        out: &mut MeshData,
        s: &mut DecodeScratch,
    ) -> Result<Walk, FormatError> {
        let h = &self.header;
        let n = h.vertex_count as usize;
        // Indices first: the walk and the normal prediction follow the triangles.
        set_len(&mut out.indices, h.index_count as usize);
        self.index_stream(&mut out.indices, &mut s.bytes, &mut s.zstd)?;
        check_indices(&out.indices, h.vertex_count)?;

        let has = |f: u8| h.flags & f != 0;
        let has_uvs = has(CookedHeader::HAS_UVS);
        let mut walk = Walk {
            positions: has(CookedHeader::PREDICTED_POSITIONS),
            uvs: has(CookedHeader::PREDICTED_UVS) && has_uvs,
            // The walk sums face normals as it goes when it restores positions.
            predicted_normals: has(CookedHeader::HAS_NORMALS)
                && has(CookedHeader::PREDICTED_NORMALS),
            parallelogram_normals: has(CookedHeader::HAS_NORMALS)
                && has(CookedHeader::PARALLELOGRAM_NORMALS),
        };
        // One element past the end, zero: the walk's `Zero` prediction.
        set_len(&mut s.positions, n + 1);
        if has(CookedHeader::SHARED_POSITIONS) {
            // The distinct positions, restored by the walk over the triangles of
            // positions, then each vertex's.
            #[cfg(simd_x86)]
            tiers::shared_positions::<WIDE>(self, &out.indices, walk.positions, s)?;
            #[cfg(not(simd_x86))]
            self.shared_positions(&out.indices, walk.positions, s)?;
            walk.positions = false;
        } else {
            self.vertex_stream(0, &mut s.positions[..n], &mut s.bytes, &mut s.zstd)?;
        }
        s.positions[n] = [0; 4];
        if has_uvs {
            set_len(&mut s.uvs, n + 1);
            self.vertex_stream(3, &mut s.uvs[..n], &mut s.bytes, &mut s.zstd)?;
            s.uvs[n] = [0; 2];
        }
        // Normals predicted by the walk are restored in it: decode them first.
        if walk.parallelogram_normals {
            set_len(&mut s.normals, n + 1);
            self.vertex_stream(1, &mut s.normals[..n], &mut s.bytes, &mut s.zstd)?;
            s.normals[n] = [0; 2];
        }
        Ok(walk)
    }

    /// The walk's instance for the tables `w` names (restoring residuals, summing
    /// face normals on the way where the normals are predicted from them), the face
    /// normal sums where no walk ran, then the uvs predicted from the final
    /// positions.
    #[inline(always)]
    fn restore_codes(&self, w: Walk, indices: &[u32], s: &mut DecodeScratch) {
        let h = &self.header;
        let n = h.vertex_count as usize;
        let (idx, pos, uvs, walk) = (indices, &mut s.positions, &mut s.uvs, &mut s.walk);
        let nor: &mut [[u16; 2]] = bytemuck::cast_slice_mut(&mut s.normals[..]);
        let pw = 8 - h.position_damping as i32;
        let sums = &mut s.sums;
        match (
            w.positions,
            w.uvs,
            w.predicted_normals,
            w.parallelogram_normals,
        ) {
            (true, true, true, _) => {
                unpredict::<true, true, true, false>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (true, false, true, _) => {
                unpredict::<true, false, true, false>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (true, true, false, false) => {
                unpredict::<true, true, false, false>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (true, true, false, true) => {
                unpredict::<true, true, false, true>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (true, false, false, false) => {
                unpredict::<true, false, false, false>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (true, false, false, true) => {
                unpredict::<true, false, false, true>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            // Positions already final (shared positions restored them): the uv walk
            // sums the face normals as it goes.
            (false, true, true, _) => {
                unpredict::<false, true, true, false>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (false, true, false, false) => {
                unpredict::<false, true, false, false>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (false, true, false, true) => {
                unpredict::<false, true, false, true>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (false, false, _, true) => {
                unpredict::<false, false, false, true>(idx, n, pw, pos, uvs, nor, walk, sums)
            }
            (false, false, _, false) => {}
        }
        if w.predicted_normals && !w.positions && !w.uvs {
            normal_sums(&s.positions[..n], indices, &mut s.sums);
        }
        if h.flags & CookedHeader::HAS_UVS != 0 && h.uv_axes != 0 {
            // Uvs predicted from the positions, now final.
            let (pb, ub) = (h.position_bits as u32, h.uv_bits as u32);
            UvFromPositions::new(h.uv_axes, h.bounds_min, h.bounds_max, pb, ub)
                .restore(&s.positions[..n], &mut s.uvs[..n]);
        }
    }

    /// Positions sit on one cubic grid over the largest extent (see `max_extent`):
    /// `out.positions` dequantised from the final codes.
    #[inline(always)]
    fn positions_out<const WIDE: bool>(&self, positions: &[[u16; 4]], out: &mut MeshData) {
        let h = &self.header;
        let step = unorm_step(
            0.0,
            max_extent(h.bounds_min, h.bounds_max),
            h.position_bits as u32,
        );
        let min = h.bounds_min;
        set_len(&mut out.positions, positions.len());
        #[cfg(simd_x86)]
        let done = if WIDE {
            0
        } else {
            crate::simd::dequantize_positions(positions, min, step, &mut out.positions)
        };
        #[cfg(not(simd_x86))]
        let done = 0;
        for (o, q) in out.positions[done..].iter_mut().zip(&positions[done..]) {
            *o = [
                dequantize_unorm(q[0], min[0], step),
                dequantize_unorm(q[1], min[1], step),
                dequantize_unorm(q[2], min[2], step),
            ];
        }
    }

    /// `out.normals`: the normals stream (unless the walk restored it,
    /// `parallelogram`), the geometric prediction added where the normals are its
    /// residuals, then the octahedral decode.
    #[inline(always)]
    fn normals_out<const WIDE: bool>(
        &self,
        parallelogram: bool,
        out: &mut MeshData,
        s: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        let h = &self.header;
        if h.flags & CookedHeader::HAS_NORMALS == 0 {
            out.normals.clear();
            return Ok(());
        }
        let n = h.vertex_count as usize;
        let nb = h.normal_bits as u32;
        if !parallelogram {
            set_len(&mut s.normals, n);
            self.vertex_stream(1, &mut s.normals, &mut s.bytes, &mut s.zstd)?;
        }
        let inv = 1.0 / oct_scale(nb);
        set_len(&mut out.normals, n);
        let q = &s.normals[..n];
        if h.flags & CookedHeader::PREDICTED_NORMALS != 0 {
            let scale = oct_code_scale(nb);
            #[cfg(simd_x86)]
            let done = if WIDE {
                0
            } else {
                crate::simd::predicted_normals(q, &s.sums, scale, inv, &mut out.normals)
            };
            #[cfg(not(simd_x86))]
            let done = 0;
            let rest = q[done..].iter().zip(&s.sums[done..]);
            for (o, (q, &sum)) in out.normals[done..].iter_mut().zip(rest) {
                let p = predicted_code(sum, scale);
                *o = oct_decode_inv([q[0].wrapping_add(p[0]), q[1].wrapping_add(p[1])], inv);
            }
        } else {
            #[cfg(simd_x86)]
            let done = if WIDE {
                0
            } else {
                crate::simd::oct_decode_all(q, inv, &mut out.normals)
            };
            #[cfg(not(simd_x86))]
            let done = 0;
            for (o, &q) in out.normals[done..].iter_mut().zip(&q[done..]) {
                *o = oct_decode_inv(q, inv);
            }
        }
        Ok(())
    }

    /// `out.tangents`: the tangents stream decoded, each with the handedness its
    /// vertex's position word 3 holds.
    #[inline(always)]
    fn tangents_out<const WIDE: bool>(
        &self,
        out: &mut MeshData,
        s: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        let h = &self.header;
        if h.flags & CookedHeader::HAS_TANGENTS == 0 {
            out.tangents.clear();
            return Ok(());
        }
        let n = h.vertex_count as usize;
        let positions = &s.positions[..n];
        set_len(&mut s.tangents, n);
        self.vertex_stream(2, &mut s.tangents, &mut s.bytes, &mut s.zstd)?;
        let inv = 1.0 / oct_scale(h.tangent_bits as u32);
        set_len(&mut out.tangents, n);
        #[cfg(simd_x86)]
        let done = if WIDE {
            0
        } else {
            crate::simd::tangents(&s.tangents, positions, inv, &mut out.tangents)
        };
        #[cfg(not(simd_x86))]
        let done = 0;
        let rest = s.tangents[done..].iter().zip(&positions[done..]);
        for (o, (&q, p)) in out.tangents[done..].iter_mut().zip(rest) {
            let t = oct_decode_inv(q, inv);
            *o = [t[0], t[1], t[2], if p[3] & 1 != 0 { -1.0 } else { 1.0 }];
        }
        Ok(())
    }

    /// `out.uvs`: the final uv codes dequantised, per component over its range.
    #[inline(always)]
    fn uvs_out<const WIDE: bool>(&self, out: &mut MeshData, s: &DecodeScratch) {
        let h = &self.header;
        if h.flags & CookedHeader::HAS_UVS == 0 {
            out.uvs.clear();
            return;
        }
        let n = h.vertex_count as usize;
        let ub = h.uv_bits as u32;
        let (lo, hi) = (h.uv_min, h.uv_max);
        let st = [unorm_step(lo[0], hi[0], ub), unorm_step(lo[1], hi[1], ub)];
        set_len(&mut out.uvs, n);
        #[cfg(simd_x86)]
        let done = if WIDE {
            0
        } else {
            crate::simd::dequantize_uvs(&s.uvs[..n], lo, st, &mut out.uvs)
        };
        #[cfg(not(simd_x86))]
        let done = 0;
        for (o, q) in out.uvs[done..].iter_mut().zip(&s.uvs[done..n]) {
            *o = [
                dequantize_unorm(q[0], lo[0], st[0]),
                dequantize_unorm(q[1], lo[1], st[1]),
            ];
        }
    }

    /// [`CookedHeader::SHARED_POSITIONS`]: undoes the remap into vertex positions
    /// ids, restores the distinct positions (the walk over the triangles of
    /// positions when `pp`) and gives every vertex its own in `s.positions[..n]`.
    /// Inlined into a function per instruction set (`simd::shared_positions`), so
    /// that it too runs AVX2 and BMI2 code where the CPU has them (its bit unpacking
    /// and walk are most of a shared-positions decode).
    #[inline(always)]
    pub(crate) fn shared_positions(
        &self,
        indices: &[u32],
        pp: bool,
        s: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        let h = &self.header;
        let (n, u) = (h.vertex_count as usize, h.position_count as usize);
        let err = |codec| FormatError::StreamDecode {
            stream: Stream::Positions,
            codec,
        };
        set_len(&mut s.remap, n);
        let d = StreamDesc {
            codec: h.remap_codec as u32,
            stored_len: h.remap_len,
            coded_len: 4 * n as u32,
            decoded_len: 4 * n as u32,
        };
        let bytes = entropy(0, &d, self.remap, &mut s.bytes, &mut s.zstd)?;
        let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut s.remap[..]);
        if d.codec == Codec::PlanesZstd as u32 {
            join_planes(bytes, dst, 4);
        } else {
            // parse() checked a raw remap's length.
            dst.copy_from_slice(bytes);
        }
        // 0: the next new position; k: the one numbered k before it. Both are
        // `next - k`; branch-free, since new and repeated positions alternate without
        // a pattern a predictor could learn, and a k past the first position is
        // found after the loop.
        #[cfg(simd_x86)]
        let (mut next, mut bad, done) = crate::simd::unremap(&mut s.remap, 0);
        #[cfg(not(simd_x86))]
        let (mut next, mut bad, done) = (0u32, false, 0);
        for r in &mut s.remap[done..] {
            let k = *r;
            bad |= k > next;
            *r = next.wrapping_sub(k);
            next += u32::from(k == 0);
        }
        if bad || next as usize != u {
            return Err(err("position remap"));
        }
        set_len(&mut s.shared, u + 1);
        self.vertex_stream(0, &mut s.shared[..u], &mut s.bytes, &mut s.zstd)?;
        s.shared[u] = [0; 4];
        // Local slices: through `s` every store made the compiler reload the
        // vectors' pointers and lengths.
        let remap = &s.remap[..n];
        if pp {
            set_len(&mut s.position_indices, indices.len());
            crate::unwalk::gather(remap, indices, &mut s.position_indices);
            let w = 8 - h.position_damping as i32;
            unpredict::<true, false, false, false>(
                &s.position_indices,
                u,
                w,
                &mut s.shared,
                &mut [],
                &mut [],
                &mut s.walk,
                &mut s.sums,
            );
        }
        let shared = &s.shared[..=u];
        crate::unwalk::gather(shared, remap, &mut s.positions[..n]);
        Ok(())
    }

    /// Decodes into a new mesh.
    pub fn decode(&self) -> Result<MeshData, FormatError> {
        let mut out = MeshData::default();
        self.decode_into(&mut out, &mut DecodeScratch::default())?;
        Ok(out)
    }

    /// Decodes vertex stream `i` into `out` (every element written on success).
    #[inline(always)]
    fn vertex_stream<T: Pod>(
        &self,
        i: usize,
        out: &mut [T],
        buf: &mut Vec<u8>,
        zstd: &mut Option<zstd::bulk::Decompressor<'static>>,
    ) -> Result<(), FormatError> {
        if out.is_empty() {
            return Ok(());
        }
        let d = &self.header.streams[i];
        let err = |codec| FormatError::StreamDecode {
            stream: STREAMS[i],
            codec,
        };
        let ranged =
            d.codec == Codec::BucketsRanged as u32 || d.codec == Codec::BucketsRangedZigzag as u32;
        if ranged || d.codec == Codec::Buckets as u32 || d.codec == Codec::BucketsZigzag as u32 {
            let form = if ranged {
                crate::buckets::Form::Ranged
            } else {
                crate::buckets::Form::Zstd(zstd_context(zstd).map_err(|_| err("zstd"))?)
            };
            let values: &mut [u16] = bytemuck::cast_slice_mut(out);
            let zigzag = d.codec == Codec::BucketsZigzag as u32
                || d.codec == Codec::BucketsRangedZigzag as u32;
            let c = std::mem::size_of::<T>() / 2;
            #[cfg(simd_x86)]
            let r = tiers::buckets(self.streams[i], c, zigzag, values, buf, form);
            #[cfg(not(simd_x86))]
            let r = buckets::decode(self.streams[i], c, zigzag, values, buf, form);
            return r.map_err(|_| err(if ranged { "ranged buckets" } else { "buckets" }));
        }
        let bytes = entropy(i, d, self.streams[i], buf, zstd)?;
        let dst: &mut [u8] = bytemuck::cast_slice_mut(out);
        if d.codec == Codec::Raw as u32 {
            // parse() checked stored == decoded == n * size_of::<T>().
            dst.copy_from_slice(bytes);
        } else if d.codec == Codec::PlanesZstd as u32 {
            join_planes(bytes, dst, std::mem::size_of::<T>());
        } else if !meshopt_into::vertices(bytes, out) {
            return Err(err("meshopt vertex"));
        }
        Ok(())
    }

    /// Decodes the index stream into `out` (`index_count` elements).
    #[inline(always)]
    fn index_stream(
        &self,
        out: &mut [u32],
        buf: &mut Vec<u8>,
        zstd: &mut Option<zstd::bulk::Decompressor<'static>>,
    ) -> Result<(), FormatError> {
        if out.is_empty() {
            return Ok(());
        }
        let d = &self.header.streams[4];
        let bytes = entropy(4, d, self.streams[4], buf, zstd)?;
        if d.codec == Codec::PlanesZstd as u32 {
            join_planes(bytes, bytemuck::cast_slice_mut(out), 4);
        } else if d.codec == Codec::Raw as u32 {
            bytemuck::cast_slice_mut::<u32, u8>(out).copy_from_slice(bytes);
        } else if !meshopt_into::indices(bytes, out) {
            return Err(FormatError::StreamDecode {
                stream: Stream::Indices,
                codec: "meshopt index",
            });
        }
        Ok(())
    }
}

/// Every index below `vertex_count`: one vectorisable pass, and the first offender
/// found only when there is one.
#[inline(always)]
fn check_indices(indices: &[u32], vertex_count: u32) -> Result<(), FormatError> {
    let max = indices.iter().copied().max().unwrap_or(0);
    if max < vertex_count || indices.is_empty() {
        return Ok(());
    }
    let (position, &index) = indices
        .iter()
        .enumerate()
        .find(|(_, &i)| i >= vertex_count)
        .expect("the maximum is out of range");
    Err(FormatError::VertexIndexOutOfRange {
        position: position as u64,
        index,
        vertex_count,
    })
}

/// The OBJ loader the crate's integration tests share.
#[cfg(all(test, feature = "encode", simd_x86))]
#[path = "../tests/support/obj.rs"]
mod test_obj;

/// The generated terrain tile the crate's integration tests share (uvs that follow
/// the positions).
#[cfg(all(test, feature = "encode", simd_x86))]
#[path = "../tests/support/tile.rs"]
mod test_tile;

#[cfg(all(test, feature = "encode", simd_x86))]
mod tests {
    use super::tiers::stages;
    use crate::simd::Tier;
    use crate::{cook_mesh, CookConfig, CookedMesh, DecodeScratch, MeshData};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A real mesh (positions, normals and uvs as stored).
    fn real(name: &str) -> MeshData {
        let path = farsight_testkit::mesh(name);
        super::test_obj::obj_mesh(&path).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A noisy uv sphere (poles of many triangles, a uv seam, normals from the
    /// sphere rather than the noisy surface).
    fn noisy_sphere(rng: &mut ChaCha8Rng) -> MeshData {
        let (rings, segs) = (24u32, 40u32);
        let mut m = MeshData::default();
        for r in 0..=rings {
            for s in 0..=segs {
                let (th, ph) = (
                    r as f32 / rings as f32 * std::f32::consts::PI,
                    s as f32 / segs as f32 * std::f32::consts::TAU,
                );
                let d = [th.sin() * ph.cos(), th.cos(), th.sin() * ph.sin()];
                let k = 1.0 + rng.random_range(-0.02..0.02);
                m.positions.push(d.map(|v| v * k));
                m.normals.push(d);
                m.uvs
                    .push([s as f32 / segs as f32, r as f32 / rings as f32]);
            }
        }
        for r in 0..rings {
            for s in 0..segs {
                let i = r * (segs + 1) + s;
                m.indices
                    .extend([i, i + segs + 1, i + 1, i + 1, i + segs + 1, i + segs + 2]);
            }
        }
        m
    }

    fn bits<const N: usize>(v: &[[f32; N]]) -> Vec<[u32; N]> {
        v.iter().map(|a| a.map(f32::to_bits)).collect()
    }

    #[test]
    fn every_tier_this_cpu_runs_decodes_the_bits_of_the_baseline() {
        let best = Tier::detect();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let meshes = [
            real("pirate.obj"),
            real("bunny.obj"),
            noisy_sphere(&mut rng),
            super::test_tile::terrain_tile(40, 4.0),
        ];
        let base = CookConfig::default();
        let variants = [
            base,
            CookConfig {
                entropy: false,
                ..base
            },
            CookConfig {
                predict_positions: false,
                ..base
            },
            CookConfig {
                position_bits: 11,
                normal_bits: 9,
                uv_bits: 10,
                ..base
            },
        ];
        let (mut compared, mut walked_normals, mut uvs_from_positions) = (0, 0, 0);
        for (i, mesh) in meshes.iter().enumerate() {
            for opts in &variants {
                let record = cook_mesh(mesh, opts).unwrap();
                let cooked = CookedMesh::parse(&record).unwrap();
                let flag = crate::CookedHeader::PARALLELOGRAM_NORMALS;
                walked_normals += usize::from(cooked.header.flags & flag != 0);
                uvs_from_positions += usize::from(cooked.header.uv_axes != 0);
                let (mut want, mut scratch) = (MeshData::default(), DecodeScratch::default());
                stages(Tier::Sse2, &cooked, &mut want, &mut scratch).unwrap();
                assert!(!want.normals.is_empty(), "mesh {i} decodes normals");
                for tier in [Tier::Avx2, Tier::Avx512] {
                    if tier > best {
                        continue;
                    }
                    let mut got = MeshData::default();
                    stages(tier, &cooked, &mut got, &mut scratch).unwrap();
                    let what = format!("mesh {i}, {tier:?}, {opts:?}");
                    assert_eq!(bits(&got.positions), bits(&want.positions), "{what}");
                    assert_eq!(bits(&got.normals), bits(&want.normals), "{what}");
                    assert_eq!(bits(&got.tangents), bits(&want.tangents), "{what}");
                    assert_eq!(bits(&got.uvs), bits(&want.uvs), "{what}");
                    assert_eq!(got.indices, want.indices, "{what}");
                    compared += 1;
                }
            }
        }
        eprintln!("{best:?}: {compared} decodes compared with the SSE2 baseline");
        // The sphere's normals are not its noisy surface's: the walk predicts them.
        assert!(
            walked_normals > 0,
            "no record predicted its normals by the walk"
        );
        // The tile's uvs follow its positions.
        assert!(
            uvs_from_positions > 0,
            "no record predicted its uvs from its positions"
        );
    }
}
