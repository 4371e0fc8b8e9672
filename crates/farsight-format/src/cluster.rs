//! Cluster-LOD records (`docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time`): one record per level.
//!
//! ```text
//! ClusterLevelHeader                      64 bytes
//! ClusterInfo      x cluster_count        48 bytes each
//! ClusterVertex    x vertex_count         32 bytes each (the level's compact list)
//! u32 indices      x cluster_count * 3 * CLUSTER_SLOT_TRIANGLES
//! ```
//!
//! Every cluster owns a slot of [`CLUSTER_SLOT_TRIANGLES`] triangles in the index
//! array; slots past the cluster's real triangles hold zero-area triangles (all three
//! indices equal), which the GPU discards before rasterising. So triangle `t` of a
//! level's index buffer belongs to cluster `t >> CLUSTER_SLOT_SHIFT`. Indices point into
//! the level's own vertex list, so a coarse level carries only the vertices it uses.
//! The record is read in place: [`ClusterLevel::parse`] borrows every array.

use bytemuck::{Pod, Zeroable};
use serde::{Deserialize, Serialize};

use crate::quant::{dequantize_unorm, f16_bits, f16_value, oct_decode, oct_encode, unorm_step};
use crate::{
    FormatError, Instance, Manifest, MaterialTable, RawFile, RecordIndex, RecordTag, Section,
    Stream, Version,
};

/// log2 of the triangles in a cluster slot.
pub const CLUSTER_SLOT_SHIFT: u32 = 7;
/// Triangles per cluster slot (meshoptimizer's meshlets hold at most 126 for raster).
pub const CLUSTER_SLOT_TRIANGLES: u32 = 1 << CLUSTER_SLOT_SHIFT;
/// The parent error of a cluster with no parent (it is in the coarsest level it
/// reaches): always "parent too coarse", so the cluster draws at any distance.
pub const NO_PARENT_ERROR: f32 = f32::MAX;

/// The 32-byte GPU vertex of a cluster level.
///
/// Position: 16-bit cell codes inside the model bounds (see [`crate::quant`]), so the
/// error is at most model extent / 2^17 per axis. Normal and tangent: octahedral
/// snorm16. Tangent handedness: bit 0 of `flags` (set means -1). UVs: IEEE half floats.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct ClusterVertex {
    /// unorm16 cell codes in the model bounds.
    pub position: [u16; 3],
    /// Bit 0: tangent handedness is -1. Other bits zero.
    pub flags: u16,
    /// Octahedral snorm16 normal.
    pub normal: [i16; 2],
    /// Octahedral snorm16 tangent direction.
    pub tangent: [i16; 2],
    /// First UV set, half-float bits.
    pub uv: [u16; 2],
    /// Second UV set (lightmap), half-float bits; zero when absent.
    pub uv1: [u16; 2],
    /// Vertex colour, RGBA8; white when absent.
    pub color: [u8; 4],
    /// Zero.
    pub reserved: u32,
}
const _: () = assert!(std::mem::size_of::<ClusterVertex>() == 32);

/// A vertex in float form, for [`ClusterVertex::pack`] and [`ClusterVertex::unpack`].
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct FloatVertex {
    /// Model-space position.
    pub position: [f32; 3],
    /// Unit normal.
    pub normal: [f32; 3],
    /// xyz direction, w handedness (+1 or -1).
    pub tangent: [f32; 4],
    /// Texture coordinates.
    pub uv: [f32; 2],
}

/// The 16-bit octahedral codes of directions met, by their bits: packing a mesh
/// whose vertices repeat a normal (flat shading: a face's corners; split vertices
/// at uv seams, anywhere in the list) or have no tangent encodes it once, not per
/// vertex. The last normal and tangent are checked first (runs), then a
/// direct-mapped table of codes keyed by the direction's bits ([`OctCache::with_capacity`];
/// none in [`OctCache::new`]). The codes are [`oct_encode`]'s, so a cached pack
/// writes the same bytes as [`ClusterVertex::pack`].
#[derive(Clone, Debug, Default)]
pub struct OctCache {
    /// The last normal and tangent met, by their bits, and their codes.
    last: [([u32; 3], [i16; 2]); 2],
    /// Directions by their bits and their codes, a slot per hash; empty or a
    /// power of two long.
    table: Vec<([u32; 3], [i16; 2])>,
    /// Table lookups and hits so far: a table that rarely hits (smooth meshes,
    /// every normal distinct) is dropped after [`OCT_TABLE_TRIAL`] lookups.
    lookups: u32,
    hits: u32,
}

/// Lookups after which an [`OctCache`] table that hit under one in eight is dropped.
const OCT_TABLE_TRIAL: u32 = 1024;

/// A key no direction has but NaN bits, which oct_encode maps to [0, 0]: an empty
/// slot is a true entry.
const NAN_KEY: ([u32; 3], [i16; 2]) = ([u32::MAX; 3], [0; 2]);

impl OctCache {
    /// A cache for packing vertices in order (nothing met yet), remembering the
    /// last normal and tangent only.
    pub fn new() -> Self {
        Self {
            last: [NAN_KEY; 2],
            table: Vec::new(),
            lookups: 0,
            hits: 0,
        }
    }

    /// [`OctCache::new`] with a table of directions met for packing about
    /// `vertices` vertices (up to 4096 slots; none under 64 vertices, where
    /// clearing it would cost more than it saves).
    pub fn with_capacity(vertices: usize) -> Self {
        let slots = if vertices < 64 {
            0
        } else {
            vertices.next_power_of_two().min(4096)
        };
        Self {
            last: [NAN_KEY; 2],
            table: vec![NAN_KEY; slots],
            lookups: 0,
            hits: 0,
        }
    }

    /// `oct_encode(n, 16)` of a normal (`slot` 0) or a tangent (1), remembered.
    #[inline]
    fn encode(&mut self, slot: usize, n: [f32; 3]) -> [i16; 2] {
        let key = n.map(f32::to_bits);
        let last = &mut self.last[slot & 1];
        if last.0 == key {
            return last.1;
        }
        let code = self.lookup(key, n);
        self.last[slot & 1] = (key, code);
        code
    }

    /// `oct_encode(n, 16)` through the table (`key`: `n`'s bits), when there is one.
    #[inline(never)]
    fn lookup(&mut self, key: [u32; 3], n: [f32; 3]) -> [i16; 2] {
        if self.table.is_empty() {
            return oct_encode(n, 16);
        }
        let h =
            (key[0] ^ key[1].rotate_left(11) ^ key[2].rotate_left(22)).wrapping_mul(0x9E37_79B1);
        let at = (h >> 16) as usize & (self.table.len() - 1);
        let entry = &mut self.table[at];
        let hit = entry.0 == key;
        if !hit {
            *entry = (key, oct_encode(n, 16));
        }
        let code = entry.1;
        self.lookups += 1;
        self.hits += u32::from(hit);
        if self.lookups == OCT_TABLE_TRIAL && self.hits < OCT_TABLE_TRIAL / 8 {
            self.table = Vec::new();
        }
        code
    }
}

/// `quantize_unorm(x, min, min + extent, 16)` with the extent `max as f64 - min as
/// f64` given: the same cell (tested), without the floor (a libm call on baseline
/// x86-64): the clamp makes a negative cell 0, and truncation is the floor of a
/// value not below zero; NaN casts to 0 either way.
#[inline]
fn quantize_16(x: f32, min: f32, extent: f64) -> u16 {
    const CELLS: f64 = 65536.0;
    if extent <= 0.0 {
        return 0;
    }
    ((x as f64 - min as f64) / extent * CELLS).clamp(0.0, CELLS - 1.0) as u16
}

impl ClusterVertex {
    /// Packs a float vertex inside the model bounds `(min, max)`.
    pub fn pack(v: &FloatVertex, min: [f32; 3], max: [f32; 3]) -> Self {
        let t = [v.tangent[0], v.tangent[1], v.tangent[2]];
        Self::pack_codes(v, min, max, oct_encode(v.normal, 16), oct_encode(t, 16))
    }

    /// [`ClusterVertex::pack`] with the direction codes taken from `cache`: the same
    /// vertex, faster where directions repeat. Inlined into the caller's loop, where
    /// the bounds' extents and the cache's fields stay in registers.
    #[inline]
    pub fn pack_cached(
        v: &FloatVertex,
        min: [f32; 3],
        max: [f32; 3],
        cache: &mut OctCache,
    ) -> Self {
        let t = [v.tangent[0], v.tangent[1], v.tangent[2]];
        let normal = cache.encode(0, v.normal);
        let tangent = cache.encode(1, t);
        Self::pack_codes(v, min, max, normal, tangent)
    }

    #[inline]
    fn pack_codes(
        v: &FloatVertex,
        min: [f32; 3],
        max: [f32; 3],
        normal: [i16; 2],
        tangent: [i16; 2],
    ) -> Self {
        Self {
            position: std::array::from_fn(|i| {
                quantize_16(v.position[i], min[i], max[i] as f64 - min[i] as f64)
            }),
            flags: u16::from(v.tangent[3] < 0.0),
            normal,
            tangent,
            uv: [f16_bits(v.uv[0]), f16_bits(v.uv[1])],
            uv1: [0; 2],
            color: [255; 4],
            reserved: 0,
        }
    }

    /// Unpacks to floats with the model bounds it was packed in.
    pub fn unpack(&self, min: [f32; 3], max: [f32; 3]) -> FloatVertex {
        let t = oct_decode(self.tangent, 16);
        let w = if self.flags & 1 != 0 { -1.0 } else { 1.0 };
        FloatVertex {
            position: std::array::from_fn(|i| {
                dequantize_unorm(self.position[i], min[i], unorm_step(min[i], max[i], 16))
            }),
            normal: oct_decode(self.normal, 16),
            tangent: [t[0], t[1], t[2], w],
            uv: [f16_value(self.uv[0]), f16_value(self.uv[1])],
        }
    }
}

/// The per-cluster record: its own error sphere and error, and its parent group's.
/// The cut draws a cluster when its own error projects under the threshold and its
/// parent's does not; both sides of a group boundary carry the same pair.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct ClusterInfo {
    /// Centre xyz and radius of the sphere the cluster's own error is measured from.
    pub sphere: [f32; 4],
    /// Centre xyz and radius of the parent group's sphere.
    pub parent_sphere: [f32; 4],
    /// The cluster's own error (model units).
    pub error: f32,
    /// The parent group's error, or [`NO_PARENT_ERROR`].
    pub parent_error: f32,
    /// Real triangles in the slot (1..=CLUSTER_SLOT_TRIANGLES); the rest are padding.
    pub triangle_count: u16,
    /// The one material every triangle of the cluster uses (each material's part is
    /// clustered on its own: `docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time`): an index into the manifest's
    /// `materials`, below the level header's `material_count`.
    pub material: u16,
    /// The DAG group the cluster was cut from (index within its level).
    pub group: u32,
}
const _: () = assert!(std::mem::size_of::<ClusterInfo>() == 48);
const _: () = assert!(std::mem::align_of::<ClusterInfo>() == 4);
/// Size of one [`ClusterInfo`] in a level record.
pub(crate) const CLUSTER_INFO_BYTES: usize = std::mem::size_of::<ClusterInfo>();

/// The header of a cluster level record.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct ClusterLevelHeader {
    /// Level number, 0 the finest.
    pub level: u32,
    /// Clusters in the level (each one slot of `CLUSTER_SLOT_TRIANGLES` triangles).
    pub cluster_count: u32,
    /// Vertices in the level's vertex list.
    pub vertex_count: u32,
    /// Must equal [`CLUSTER_SLOT_SHIFT`].
    pub slot_shift: u32,
    /// Model bounds the positions are quantised in (the same for every level).
    pub bounds_min: [f32; 3],
    /// The largest parent error of the level: once it projects under a pixel, this
    /// level and every finer one are not needed (`docs/design/region-streaming-and-cluster-lod.md#which-levels-a-model-needs`).
    pub max_parent_error: f32,
    /// Model bounds' maximum corner (see `bounds_min`).
    pub bounds_max: [f32; 3],
    /// The largest own error of the level's clusters.
    pub max_error: f32,
    /// Real triangles, padding excluded.
    pub triangle_count: u32,
    /// Materials of the mesh (every cluster's `material` is below it; at least 1
    /// when the level has clusters).
    pub material_count: u32,
    /// Zero.
    pub reserved: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<ClusterLevelHeader>() == 64);

/// A cluster level borrowed from record bytes.
#[derive(Clone, Copy, Debug)]
pub struct ClusterLevel<'a> {
    /// The record's header.
    pub header: ClusterLevelHeader,
    /// One entry per cluster, in slot order.
    pub clusters: &'a [ClusterInfo],
    /// The level's vertices, quantised in the model bounds.
    pub vertices: &'a [ClusterVertex],
    /// `cluster_count * 3 * CLUSTER_SLOT_TRIANGLES` indices into `vertices`.
    pub indices: &'a [u32],
}

fn bad(field: &'static str, found: u64) -> FormatError {
    FormatError::BadField {
        section: Section::RecordHeader,
        field,
        found,
    }
}

fn slot_len() -> usize {
    3 * CLUSTER_SLOT_TRIANGLES as usize
}

impl<'a> ClusterLevel<'a> {
    /// Validates a cluster level record and borrows its arrays. The bytes must be
    /// 4-byte aligned (records of a file read into [`crate::AlignedBytes`] are).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        let hs = std::mem::size_of::<ClusterLevelHeader>();
        if bytes.len() < hs {
            return Err(FormatError::Truncated {
                section: Section::RecordHeader,
                needed: hs as u64,
                available: bytes.len() as u64,
            });
        }
        let header: ClusterLevelHeader = bytemuck::pod_read_unaligned(&bytes[..hs]);
        if header.slot_shift != CLUSTER_SLOT_SHIFT {
            return Err(bad("slot_shift", header.slot_shift as u64));
        }
        check_header(&header)?;
        let cc = header.cluster_count as u64;
        let vc = header.vertex_count as u64;
        let need =
            hs as u64 + cc * CLUSTER_INFO_BYTES as u64 + vc * 32 + cc * slot_len() as u64 * 4;
        if need != bytes.len() as u64 {
            return Err(FormatError::LengthPastEnd {
                section: Section::Stream(Stream::Clusters),
                length: need,
                available: bytes.len() as u64,
            });
        }
        let (cc, vc) = (cc as usize, vc as usize);
        let c_end = hs + cc * CLUSTER_INFO_BYTES;
        let v_end = c_end + vc * 32;
        let misaligned = |_| FormatError::Misaligned {
            what: "cluster level record",
        };
        let clusters: &[ClusterInfo] =
            bytemuck::try_cast_slice(&bytes[hs..c_end]).map_err(misaligned)?;
        let vertices: &[ClusterVertex] =
            bytemuck::try_cast_slice(&bytes[c_end..v_end]).map_err(misaligned)?;
        let indices: &[u32] = bytemuck::try_cast_slice(&bytes[v_end..]).map_err(misaligned)?;
        let level = Self {
            header,
            clusters,
            vertices,
            indices,
        };
        level.validate(true)?;
        Ok(level)
    }

    /// The checks of [`Self::parse`] past the byte layout: every cluster's floats,
    /// triangle count, material, slot indices and padding (`check_padding`; false
    /// only where the caller has just padded every slot with its first index, see
    /// [`ClusterLevelHeader::write_record`]: then neither the padding nor its
    /// indices are looked at again), and the header's totals. One pass over the
    /// arrays.
    fn validate(&self, check_padding: bool) -> Result<(), FormatError> {
        let mut triangles = 0u64;
        let vertex_count = self.header.vertex_count;
        for (c, info) in self.clusters.iter().enumerate() {
            let all = info
                .sphere
                .iter()
                .chain(&info.parent_sphere)
                .chain([&info.error, &info.parent_error]);
            if all.clone().any(|f| !f.is_finite()) {
                return Err(FormatError::NonFinite {
                    what: "cluster info",
                });
            }
            let n = u32::from(info.triangle_count);
            if n == 0 || n > CLUSTER_SLOT_TRIANGLES {
                return Err(bad("cluster triangle_count", n as u64));
            }
            if u32::from(info.material) >= self.header.material_count {
                return Err(bad("cluster material", info.material as u64));
            }
            triangles += n as u64;
            let slot = &self.indices[c * slot_len()..(c + 1) * slot_len()];
            // Where the caller padded the slot, each padding index repeats the
            // slot's first, so the real indices are all there is to check.
            let checked = if check_padding {
                slot
            } else {
                &slot[..3 * n as usize]
            };
            // One branch-free reduction per slot; the position is looked up only
            // on failure (the first past the end is a real index either way).
            if checked.iter().fold(0u32, |m, &v| m.max(v)) >= vertex_count {
                let (i, &v) = slot
                    .iter()
                    .enumerate()
                    .find(|(_, &v)| v >= vertex_count)
                    .expect("a maximum past the end exists");
                return Err(FormatError::VertexIndexOutOfRange {
                    position: (c * slot_len() + i) as u64,
                    index: v,
                    vertex_count,
                });
            }
            if check_padding {
                for pad in slot[3 * n as usize..].chunks_exact(3) {
                    if pad[0] != pad[1] || pad[1] != pad[2] {
                        return Err(bad("padding triangle not zero-area", c as u64));
                    }
                }
            }
        }
        if triangles != self.header.triangle_count as u64 {
            return Err(bad("triangle_count", self.header.triangle_count as u64));
        }
        // Branch-free: a flag past bit 0 or a reserved bit, or'd over the list.
        let stray = |v: &ClusterVertex| u32::from(v.flags & !1) | v.reserved;
        if self.vertices.iter().fold(0, |all, v| all | stray(v)) != 0 {
            return Err(bad("vertex flags", 0));
        }
        Ok(())
    }

    /// The cluster that triangle `t` of this level's index buffer belongs to.
    #[inline]
    pub fn cluster_of_triangle(t: u32) -> u32 {
        t >> CLUSTER_SLOT_SHIFT
    }
}

/// The header checks of [`ClusterLevel::parse`] that do not need the arrays.
fn check_header(header: &ClusterLevelHeader) -> Result<(), FormatError> {
    if header.slot_shift != CLUSTER_SLOT_SHIFT {
        return Err(bad("slot_shift", header.slot_shift as u64));
    }
    if header.reserved != [0; 2] {
        return Err(FormatError::NonZeroPadding {
            section: Section::RecordHeader,
            offset: 56,
        });
    }
    let floats = header.bounds_min.iter().chain(&header.bounds_max);
    if floats
        .chain([&header.max_error, &header.max_parent_error])
        .any(|f| !f.is_finite())
    {
        return Err(FormatError::NonFinite {
            what: "cluster level header",
        });
    }
    if (0..3).any(|i| header.bounds_min[i] > header.bounds_max[i]) {
        return Err(bad("bounds", 0));
    }
    if header.cluster_count > 0 && header.material_count == 0 {
        return Err(bad("material_count", 0));
    }
    if header.material_count > u32::from(u16::MAX) + 1 {
        return Err(bad("material_count", header.material_count as u64));
    }
    Ok(())
}

/// Lays out a cluster level record from its parts, after checking them as a reader
/// would (so a producer bug fails at cook time, not in the game): the same header
/// and array checks as [`ClusterLevel::parse`], run on the typed parts directly.
/// `indices` holds whole slots: `clusters.len() * 3 * CLUSTER_SLOT_TRIANGLES`.
pub fn encode_cluster_level(
    header: &ClusterLevelHeader,
    clusters: &[ClusterInfo],
    vertices: &[ClusterVertex],
    indices: &[u32],
) -> Result<Vec<u8>, FormatError> {
    if clusters.len() != header.cluster_count as usize
        || vertices.len() != header.vertex_count as usize
    {
        return Err(FormatError::BadInput {
            what: "header counts disagree with arrays",
            found: clusters.len() as u64,
        });
    }
    if indices.len() != clusters.len() * slot_len() {
        return Err(FormatError::BadInput {
            what: "indices are not whole slots",
            found: indices.len() as u64,
        });
    }
    check_header(header)?;
    ClusterLevel {
        header: *header,
        clusters,
        vertices,
        indices,
    }
    .validate(true)?;
    let mut out = Vec::with_capacity(
        64 + clusters.len() * CLUSTER_INFO_BYTES + vertices.len() * 32 + indices.len() * 4,
    );
    out.extend_from_slice(bytemuck::bytes_of(header));
    out.extend_from_slice(bytemuck::cast_slice(clusters));
    out.extend_from_slice(bytemuck::cast_slice(vertices));
    out.extend_from_slice(bytemuck::cast_slice(indices));
    Ok(out)
}

impl ClusterLevelHeader {
    /// Bytes of the level record this header describes (its cluster and vertex
    /// counts): what to reserve with [`crate::FileWriter::reserve_record`].
    pub fn record_len(&self) -> usize {
        let (cc, vc) = (self.cluster_count as usize, self.vertex_count as usize);
        std::mem::size_of::<Self>() + cc * CLUSTER_INFO_BYTES + vc * 32 + cc * slot_len() * 4
    }

    /// Writes the level record into `out` (exactly [`Self::record_len`] bytes,
    /// 4-byte aligned, as [`crate::FileWriter::finish_filled`] hands them): the
    /// header and `clusters` here, then `fill(vertices, slots)` writes the level's
    /// vertex list and, in each cluster's slot, its `3 * triangle_count` real
    /// indices; the rest of every slot is padded here. The record is then checked
    /// as [`ClusterLevel::parse`] would check it (what [`encode_cluster_level`]
    /// does, without a buffer of its own), but for the padding written here: every
    /// index past a cluster's `3 * triangle_count` repeats the slot's first, so each
    /// padding triangle is zero-area by construction (a count past the slot fails
    /// the check of counts).
    pub fn write_record(
        &self,
        out: &mut [u8],
        clusters: &[ClusterInfo],
        fill: impl FnOnce(&mut [ClusterVertex], &mut [u32]),
    ) -> Result<(), FormatError> {
        if clusters.len() != self.cluster_count as usize {
            return Err(FormatError::BadInput {
                what: "header counts disagree with arrays",
                found: clusters.len() as u64,
            });
        }
        if out.len() != self.record_len() {
            return Err(FormatError::BadInput {
                what: "record buffer is not the record's length",
                found: out.len() as u64,
            });
        }
        check_header(self)?;
        let hs = std::mem::size_of::<Self>();
        let (head, rest) = out.split_at_mut(hs);
        let (info, rest) = rest.split_at_mut(clusters.len() * CLUSTER_INFO_BYTES);
        let (vertices, slots) = rest.split_at_mut(self.vertex_count as usize * 32);
        head.copy_from_slice(bytemuck::bytes_of(self));
        info.copy_from_slice(bytemuck::cast_slice(clusters));
        let misaligned = |_| FormatError::Misaligned {
            what: "cluster level record buffer",
        };
        let vertices: &mut [ClusterVertex] =
            bytemuck::try_cast_slice_mut(vertices).map_err(misaligned)?;
        let slots: &mut [u32] = bytemuck::try_cast_slice_mut(slots).map_err(misaligned)?;
        fill(vertices, slots);
        for (slot, c) in slots.chunks_exact_mut(slot_len()).zip(clusters) {
            let real = (3 * c.triangle_count as usize).min(slot_len());
            let pad = slot[0];
            slot[real..].fill(pad);
        }
        self.check_written(clusters, vertices, slots)
    }

    /// A level record just written, checked as [`ClusterLevel::parse`] checks one.
    fn check_written(
        &self,
        clusters: &[ClusterInfo],
        vertices: &[ClusterVertex],
        slots: &[u32],
    ) -> Result<(), FormatError> {
        ClusterLevel {
            header: *self,
            clusters,
            vertices,
            indices: slots,
        }
        .validate(false)
    }
}

impl ClusterLevelHeader {
    /// [`Self::write_record`], appending the record to `out` (as
    /// [`crate::FileWriter::finish_appended`] asks) rather than writing it into
    /// zeroed bytes: the same bytes. `vertices` yields the level's vertex list
    /// (its header's count of them) and `triangles(c)` cluster `c`'s real indices,
    /// which fill its slot from the start as `write_record`'s filler does (cut at
    /// the slot, the rest of the slot padded from `3 * triangle_count` on with
    /// its first index, a slot with no index holding zeros before that).
    pub fn append_record<'a>(
        &self,
        out: &mut Vec<u8>,
        clusters: &[ClusterInfo],
        vertices: impl ExactSizeIterator<Item = &'a ClusterVertex>,
        triangles: impl Fn(usize) -> &'a [u32],
    ) -> Result<(), FormatError> {
        if clusters.len() != self.cluster_count as usize
            || vertices.len() != self.vertex_count as usize
        {
            return Err(FormatError::BadInput {
                what: "header counts disagree with arrays",
                found: clusters.len() as u64,
            });
        }
        check_header(self)?;
        let start = out.len();
        out.reserve(self.record_len());
        out.extend_from_slice(bytemuck::bytes_of(self));
        out.extend_from_slice(bytemuck::cast_slice(clusters));
        for v in vertices {
            out.extend_from_slice(bytemuck::bytes_of(v));
        }
        // Each slot: its indices, then the padding (zeros, then its first index
        // written over them where it is not zero).
        let misaligned = |_| FormatError::Misaligned {
            what: "cluster level record buffer",
        };
        for (ci, c) in clusters.iter().enumerate() {
            let tris = triangles(ci);
            let n = tris.len().min(slot_len());
            let real = (3 * c.triangle_count as usize).min(slot_len());
            let pad = tris.first().copied().unwrap_or(0);
            let copied = n.min(real);
            out.extend_from_slice(bytemuck::cast_slice(&tris[..copied]));
            let at = out.len();
            out.resize(at + 4 * (slot_len() - copied), 0);
            if pad != 0 {
                let padding: &mut [u32] =
                    bytemuck::try_cast_slice_mut(&mut out[at + 4 * (real - copied)..])
                        .map_err(misaligned)?;
                padding.fill(pad);
            }
        }
        let record = &out[start..];
        if record.len() != self.record_len() {
            return Err(FormatError::BadInput {
                what: "record buffer is not the record's length",
                found: record.len() as u64,
            });
        }
        let hs = std::mem::size_of::<Self>();
        let (_, rest) = record.split_at(hs + clusters.len() * CLUSTER_INFO_BYTES);
        let (vertices, slots) = rest.split_at(self.vertex_count as usize * 32);
        let vertices: &[ClusterVertex] = bytemuck::try_cast_slice(vertices).map_err(misaligned)?;
        let slots: &[u32] = bytemuck::try_cast_slice(slots).map_err(misaligned)?;
        self.check_written(clusters, vertices, slots)
    }
}

/// Pads one cluster's triangles (`3 * n` indices, `n <= CLUSTER_SLOT_TRIANGLES`) to a
/// full slot with zero-area triangles repeating its first vertex, appending to `out`.
pub fn push_cluster_slot(triangles: &[u32], out: &mut Vec<u32>) {
    assert!(triangles.len() % 3 == 0 && !triangles.is_empty());
    assert!(
        triangles.len() <= slot_len(),
        "cluster has more than {CLUSTER_SLOT_TRIANGLES} triangles"
    );
    out.extend_from_slice(triangles);
    let pad = triangles[0];
    out.extend(std::iter::repeat_n(pad, slot_len() - triangles.len()));
}

/// One level entry of a [`ClusterMeshManifest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterLevelEntry {
    /// The level's record.
    pub record: RecordIndex,
    /// Copy of the record's `max_parent_error`, so streaming decides without reading it.
    pub max_parent_error: f32,
    /// Copy of the record's real triangle count.
    pub triangles: u32,
    /// Copy of the record's cluster count.
    pub clusters: u32,
    /// Copy of the record's vertex count.
    pub vertices: u32,
    /// Record size in bytes (what streaming this level in costs).
    pub bytes: u64,
}

/// The manifest of a cluster-LOD mesh file: model bounds and its levels, finest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterMeshManifest {
    /// The model's name (its source file's stem).
    pub name: String,
    /// Model bounds' minimum corner: every level's positions are quantised in these bounds.
    pub bounds_min: [f32; 3],
    /// Model bounds' maximum corner.
    pub bounds_max: [f32; 3],
    /// The levels, finest first.
    pub levels: Vec<ClusterLevelEntry>,
    /// Material names; a cluster's `material` indexes this list.
    #[serde(default)]
    pub materials: Vec<String>,
    /// Where the mesh is drawn when its source placed it more than once (glTF nodes
    /// sharing the mesh, `EXT_mesh_gpu_instancing`): one mesh-to-world transform
    /// per placement, column-major 4x4. The geometry is stored once, in mesh space.
    /// Empty (and absent from the manifest) for a mesh drawn once, as cooked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<[f32; 16]>,
    /// A sphere (centre xyz, radius; model space) around every cluster's own and
    /// parent error sphere of every level ([`error_bounds`]). Placed, it is the
    /// instance bound that per-model level selection must measure from: the cut
    /// measures each cluster from its own spheres, which reach past the mesh's box
    /// (up to 1.41x its bounding sphere on FlightHelmet), so a smaller bound lets the
    /// CPU fit name a level coarser than the GPU cut draws. `None` in files written
    /// before it existed; the reader checks it encloses every record's spheres.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_bounds: Option<[f32; 4]>,
    /// Geometries 1.. of a file whose source draws several distinct meshes, some of
    /// them more than once (glTF nodes sharing meshes): each geometry is stored once,
    /// in its own space, with its own levels; geometry 0 is this manifest's own
    /// `name`, bounds, `levels`, `materials` and `error_bounds`. Empty (and absent)
    /// for a file of one geometry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geometries: Vec<ClusterGeometryEntry>,
    /// Where the file's geometries are drawn when it has several ([`Instance`]: the
    /// geometry and its geometry-to-world transform); every geometry is drawn at
    /// least once ([`crate::check_instances`]). A file of one geometry uses
    /// `instances` instead; the two are never both given. [`Self::all_placements`]
    /// reads either as one table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<Instance>,
    /// The definitions of the materials every geometry's `materials` names, and
    /// their textures ([`MaterialTable`]). Empty (and absent) where the source
    /// defined none, and in files written before materials were kept.
    #[serde(default, skip_serializing_if = "MaterialTable::is_empty")]
    pub material_table: MaterialTable,
}

/// One further geometry of a cluster file (see [`ClusterMeshManifest::geometries`]):
/// the fields geometry 0 has in the manifest itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterGeometryEntry {
    /// The geometry's name.
    pub name: String,
    /// Its bounds' minimum corner (its levels' positions are quantised in them).
    pub bounds_min: [f32; 3],
    /// Its bounds' maximum corner.
    pub bounds_max: [f32; 3],
    /// Its levels, finest first; each level record is this geometry's alone.
    pub levels: Vec<ClusterLevelEntry>,
    /// Its material names; a cluster's `material` indexes this list.
    #[serde(default)]
    pub materials: Vec<String>,
    /// Its error sphere, as [`ClusterMeshManifest::error_bounds`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_bounds: Option<[f32; 4]>,
}

/// One geometry of a cluster file, geometry 0 or a [`ClusterGeometryEntry`], as
/// [`ClusterMeshManifest::geometry`] gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClusterGeometry<'a> {
    /// The geometry's name.
    pub name: &'a str,
    /// Its bounds' minimum corner.
    pub bounds_min: [f32; 3],
    /// Its bounds' maximum corner.
    pub bounds_max: [f32; 3],
    /// Its levels, finest first.
    pub levels: &'a [ClusterLevelEntry],
    /// Its material names.
    pub materials: &'a [String],
    /// Its error sphere (centre xyz, radius), where the file has one.
    pub error_bounds: Option<[f32; 4]>,
}

impl ClusterMeshManifest {
    /// Geometries in the file: 1 plus [`Self::geometries`].
    pub fn geometry_count(&self) -> usize {
        1 + self.geometries.len()
    }

    /// Geometry `g` (0 is the manifest's own fields), or `None` past the last.
    pub fn geometry(&self, g: usize) -> Option<ClusterGeometry<'_>> {
        if g == 0 {
            return Some(ClusterGeometry {
                name: &self.name,
                bounds_min: self.bounds_min,
                bounds_max: self.bounds_max,
                levels: &self.levels,
                materials: &self.materials,
                error_bounds: self.error_bounds,
            });
        }
        let e = self.geometries.get(g - 1)?;
        Some(ClusterGeometry {
            name: &e.name,
            bounds_min: e.bounds_min,
            bounds_max: e.bounds_max,
            levels: &e.levels,
            materials: &e.materials,
            error_bounds: e.error_bounds,
        })
    }

    /// Every geometry, geometry 0 first.
    pub fn all_geometries(&self) -> impl Iterator<Item = ClusterGeometry<'_>> {
        (0..self.geometry_count()).filter_map(|g| self.geometry(g))
    }

    /// Where the geometries are drawn, as one table: [`Self::placements`] in a file
    /// of several geometries, `instances` (all of geometry 0) in a file of one.
    /// Empty for one geometry drawn once, where it is.
    pub fn all_placements(&self) -> Vec<Instance> {
        if !self.placements.is_empty() {
            return self.placements.clone();
        }
        self.instances
            .iter()
            .map(|&transform| Instance {
                geometry: 0,
                transform,
            })
            .collect()
    }
}

/// A sphere around spheres (centre xyz, radius): the centre of their box, the
/// radius reaching the furthest, a hair larger so rounding keeps it conservative.
pub fn enclosing_sphere(spheres: &[[f32; 4]]) -> [f32; 4] {
    if spheres.is_empty() {
        return [0.0; 4];
    }
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for s in spheres {
        for k in 0..3 {
            lo[k] = lo[k].min(s[k] - s[3]);
            hi[k] = hi[k].max(s[k] + s[3]);
        }
    }
    let c: [f32; 3] = std::array::from_fn(|k| 0.5 * (lo[k] + hi[k]));
    let mut r = 0.0f32;
    for s in spheres {
        r = r.max(sphere_distance(&c, s) + s[3]);
    }
    [c[0], c[1], c[2], r * (1.0 + 1e-6) + f32::EPSILON]
}

fn sphere_distance(c: &[f32; 3], s: &[f32; 4]) -> f32 {
    ((s[0] - c[0]).powi(2) + (s[1] - c[1]).powi(2) + (s[2] - c[2]).powi(2)).sqrt()
}

/// Every error sphere a cut may measure a cluster from: its own, and its parent's
/// where it has a parent (a top-level cluster's parent sphere means nothing).
fn error_spheres(c: &ClusterInfo) -> impl Iterator<Item = [f32; 4]> {
    let parent = (c.parent_error != NO_PARENT_ERROR).then_some(c.parent_sphere);
    std::iter::once(c.sphere).chain(parent)
}

/// The manifest's [`ClusterMeshManifest::error_bounds`] for these levels' clusters.
pub fn error_bounds<'a>(levels: impl IntoIterator<Item = &'a [ClusterInfo]>) -> [f32; 4] {
    let spheres: Vec<[f32; 4]> = levels
        .into_iter()
        .flatten()
        .flat_map(error_spheres)
        .collect();
    enclosing_sphere(&spheres)
}

impl Manifest for ClusterMeshManifest {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        for g in self.all_geometries() {
            for l in g.levels {
                visit(l.record, RecordTag::CLUSTER_LEVEL);
            }
        }
        self.material_table.visit_records(visit);
    }

    /// A cluster file is streamed ([`Version::Streamed`]: each level a record
    /// verified on its own), and each level entry's copies (triangles, clusters,
    /// vertices, bytes, `max_parent_error`) are its record's header fields
    /// ([`ClusterLevelEntry::check_record`]).
    fn check(&self, file: &RawFile<'_>) -> Result<(), FormatError> {
        file.require_version(Version::Streamed)?;
        self.check_error_bounds()?;
        self.check_placements()?;
        self.material_table.check(file)?;
        for g in self.all_geometries() {
            for (li, l) in g.levels.iter().enumerate() {
                let bytes = file.record(l.record)?.bytes;
                l.check_record(li as u32, bytes, g.error_bounds)?;
            }
        }
        Ok(())
    }
}

impl ClusterMeshManifest {
    /// The checks of the manifest alone: every geometry's `error_bounds`, where
    /// present, is a finite sphere.
    pub fn check_error_bounds(&self) -> Result<(), FormatError> {
        for g in self.all_geometries() {
            if let Some(b) = g.error_bounds {
                if !b.iter().all(|v| v.is_finite()) || b[3] < 0.0 {
                    return Err(FormatError::NonFinite {
                        what: "error_bounds",
                    });
                }
            }
        }
        Ok(())
    }

    /// The placement tables: `instances` (one geometry) are finite affine
    /// transforms; a file of several geometries places them all with `placements`
    /// ([`crate::check_instances`]) and gives no `instances`.
    pub fn check_placements(&self) -> Result<(), FormatError> {
        let bad = |field, found| FormatError::BadField {
            section: Section::Manifest,
            field,
            found,
        };
        if !self.instances.is_empty() && !self.placements.is_empty() {
            return Err(bad(
                "instances beside placements",
                self.instances.len() as u64,
            ));
        }
        for t in &self.instances {
            crate::check_transform(t)?;
        }
        if self.placements.is_empty() && self.geometry_count() > 1 {
            return Err(bad("placements", 0));
        }
        if !self.placements.is_empty() {
            crate::check_instances(&self.placements, self.geometry_count())?;
        }
        Ok(())
    }
}

impl ClusterLevelEntry {
    /// Checks the bytes of this entry's record, level `li` of a file whose manifest
    /// has `error_bounds`: parses it ([`ClusterLevel::parse`]), then checks that this
    /// entry's copies are its header's fields and that `error_bounds` encloses every
    /// error sphere of its clusters. What a streamer runs on each level it reads.
    pub fn check_record<'a>(
        &self,
        li: u32,
        bytes: &'a [u8],
        error_bounds: Option<[f32; 4]>,
    ) -> Result<ClusterLevel<'a>, FormatError> {
        let level = ClusterLevel::parse(bytes)?;
        let h = &level.header;
        let pairs: [(&'static str, f64, f64); 5] = [
            ("triangles", self.triangles as f64, h.triangle_count as f64),
            ("clusters", self.clusters as f64, h.cluster_count as f64),
            ("vertices", self.vertices as f64, h.vertex_count as f64),
            ("bytes", self.bytes as f64, bytes.len() as f64),
            (
                "max_parent_error",
                self.max_parent_error as f64,
                h.max_parent_error as f64,
            ),
        ];
        if let Some(&(field, manifest, record)) =
            pairs.iter().find(|(_, m, r)| m.to_bits() != r.to_bits())
        {
            return Err(FormatError::ManifestDisagrees {
                level: li,
                field,
                manifest,
                record,
            });
        }
        if let Some(b) = error_bounds {
            let centre = [b[0], b[1], b[2]];
            let reach = level
                .clusters
                .iter()
                .flat_map(error_spheres)
                .map(|s| sphere_distance(&centre, &s) + s[3])
                .fold(0.0f32, f32::max);
            // The writer's own rounding margin, and no more.
            if reach > b[3] * (1.0 + 1e-5) + 1e-6 {
                return Err(FormatError::ManifestDisagrees {
                    level: li,
                    field: "error_bounds",
                    manifest: b[3] as f64,
                    record: reach as f64,
                });
            }
        }
        Ok(level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached pack is the pack, bit for bit, for directions repeated, colliding in
    /// their slots, zero, non-finite and signed zeros.
    #[test]
    fn a_cached_pack_is_the_pack() {
        // No table; a table of 128 slots that stops paying (kept while its hits
        // pay); a table that hits (a few hundred directions met again and again,
        // colliding in their slots).
        for (cache, distinct) in [
            (OctCache::new(), 5000),
            (OctCache::with_capacity(100), 5000),
            (OctCache::with_capacity(100), 300),
            (OctCache::with_capacity(5000), 300),
        ] {
            cached_pack_is_the_pack(cache, distinct);
        }
    }

    fn cached_pack_is_the_pack(mut cache: OctCache, distinct: usize) {
        let mut state = 0x1234_5678u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state as f32 / u32::MAX as f32) * 2.0 - 1.0
        };
        let mut dirs: Vec<[f32; 3]> = (0..distinct).map(|_| [next(), next(), next()]).collect();
        let mut step = distinct / 7;
        while dirs.len() < 5000 {
            step = (step * 5 + 3) % distinct;
            dirs.push(dirs[step]);
        }
        dirs.extend([
            [0.0; 3],
            [-0.0, 0.0, -0.0],
            [f32::NAN, 0.0, 1.0],
            [f32::INFINITY, 0.0, 0.0],
            [0.0, 0.0, -1.0],
        ]);
        let (min, max) = ([-1.0; 3], [1.0; 3]);
        for round in 0..3 {
            for (i, d) in dirs.iter().enumerate() {
                let v = FloatVertex {
                    position: *d,
                    normal: *d,
                    tangent: [d[1], d[2], d[0], if i % 2 == 0 { 1.0 } else { -1.0 }],
                    uv: [d[0], d[1]],
                };
                let want = ClusterVertex::pack(&v, min, max);
                let got = ClusterVertex::pack_cached(&v, min, max, &mut cache);
                assert_eq!(got, want, "round {round}, direction {i}: {d:?}");
            }
        }
    }

    /// The packer's position cell is `quantize_unorm`'s at 16 bits: inside, on and
    /// past the bounds, at cell edges, in flat and wide bounds, and for non-finite
    /// coordinates.
    #[test]
    fn the_packers_position_cell_is_quantize_unorms() {
        use crate::quant::quantize_unorm;
        let mut state = 0x9E37_79B9u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        let bounds = [
            (-1.0f32, 1.0f32),
            (0.0, 0.0),
            (3.0, 2.0),
            (-1e-30, 1e-30),
            (-7e5, 1e6),
            (0.1, 0.3),
        ];
        for (min, max) in bounds {
            let extent = max as f64 - min as f64;
            let mut xs = vec![
                min,
                max,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                -0.0,
                0.0,
            ];
            for k in 0..=65536u32 {
                let at = min as f64 + extent * k as f64 / 65536.0;
                let x = at as f32;
                xs.extend([
                    x,
                    f32::from_bits(x.to_bits().wrapping_add(1)),
                    f32::from_bits(x.to_bits().wrapping_sub(1)),
                ]);
            }
            for _ in 0..20_000 {
                let t = next() as f32 / u32::MAX as f32 * 1.2 - 0.1;
                xs.push(min + (max - min) * t);
                xs.push(f32::from_bits(next()));
            }
            for x in xs {
                assert_eq!(
                    quantize_16(x, min, extent),
                    quantize_unorm(x, min, max, 16),
                    "{x} in [{min}, {max}]"
                );
            }
        }
    }

    #[test]
    fn a_record_written_in_place_is_the_encoded_record() {
        let vertices: Vec<ClusterVertex> = (0..5u16)
            .map(|i| ClusterVertex {
                position: [i, 2 * i, 3 * i],
                flags: i & 1,
                normal: [i as i16, -(i as i16)],
                tangent: [0; 2],
                uv: [i, i + 1],
                uv1: [0; 2],
                color: [255; 4],
                reserved: 0,
            })
            .collect();
        let tris: [&[u32]; 2] = [&[0, 1, 2, 2, 1, 3], &[3, 4, 0]];
        let clusters: Vec<ClusterInfo> = tris
            .iter()
            .enumerate()
            .map(|(i, t)| ClusterInfo {
                sphere: [0.0, 0.0, 0.0, 1.0],
                parent_sphere: [0.0, 0.0, 0.0, 2.0],
                error: 0.5 * i as f32,
                parent_error: 1.0 + i as f32,
                triangle_count: (t.len() / 3) as u16,
                material: 0,
                group: 0,
            })
            .collect();
        let header = ClusterLevelHeader {
            level: 1,
            cluster_count: 2,
            vertex_count: 5,
            slot_shift: CLUSTER_SLOT_SHIFT,
            bounds_min: [0.0; 3],
            max_parent_error: 2.0,
            bounds_max: [1.0; 3],
            max_error: 0.5,
            triangle_count: 3,
            material_count: 1,
            reserved: [0; 2],
        };
        let mut slots = Vec::new();
        for t in tris {
            push_cluster_slot(t, &mut slots);
        }
        let encoded = encode_cluster_level(&header, &clusters, &vertices, &slots).unwrap();
        assert_eq!(encoded.len(), header.record_len());
        let mut out = vec![0u32; header.record_len() / 4];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        header
            .write_record(bytes, &clusters, |v, s| {
                v.copy_from_slice(&vertices);
                for (slot, t) in s.chunks_exact_mut(slot_len()).zip(tris) {
                    slot[..t.len()].copy_from_slice(t);
                }
            })
            .unwrap();
        assert_eq!(bytemuck::cast_slice::<u32, u8>(&out), &encoded[..]);
        // A slot index past the vertex list is refused, as a reader would.
        let err = header
            .write_record(bytemuck::cast_slice_mut(&mut out), &clusters, |v, s| {
                v.copy_from_slice(&vertices);
                s[0] = 5;
            })
            .unwrap_err();
        assert!(matches!(err, FormatError::VertexIndexOutOfRange { .. }));
        // So is one at a real index past the first (its position as a reader
        // reports it), and a vertex with a stray flag or reserved bit.
        let err = header
            .write_record(bytemuck::cast_slice_mut(&mut out), &clusters, |v, s| {
                v.copy_from_slice(&vertices);
                for (slot, t) in s.chunks_exact_mut(slot_len()).zip(tris) {
                    slot[..t.len()].copy_from_slice(t);
                }
                s[slot_len() + 2] = 7;
            })
            .unwrap_err();
        assert!(matches!(
            err,
            FormatError::VertexIndexOutOfRange {
                position,
                index: 7,
                vertex_count: 5
            } if position == slot_len() as u64 + 2
        ));
        for stray in [
            |v: &mut ClusterVertex| v.flags = 2,
            |v: &mut ClusterVertex| v.reserved = 1 << 31,
        ] {
            let err = header
                .write_record(bytemuck::cast_slice_mut(&mut out), &clusters, |v, s| {
                    v.copy_from_slice(&vertices);
                    stray(&mut v[4]);
                    for (slot, t) in s.chunks_exact_mut(slot_len()).zip(tris) {
                        slot[..t.len()].copy_from_slice(t);
                    }
                })
                .unwrap_err();
            assert!(matches!(
                err,
                FormatError::BadField {
                    field: "vertex flags",
                    ..
                }
            ));
        }
        // Appended, the same bytes; with fewer indices than a cluster's count
        // (zeros up to it) and none at all (a slot of zeros), as written in place.
        for cut in [None, Some(4), Some(0)] {
            let tri = |c: usize| &tris[c][..cut.filter(|_| c == 0).unwrap_or(tris[c].len())];
            let mut out = vec![0u32; header.record_len() / 4];
            let placed =
                header.write_record(bytemuck::cast_slice_mut(&mut out), &clusters, |v, s| {
                    v.copy_from_slice(&vertices);
                    for (c, slot) in s.chunks_exact_mut(slot_len()).enumerate() {
                        slot[..tri(c).len()].copy_from_slice(tri(c));
                    }
                });
            let mut appended = vec![7u8; 16];
            let result = header.append_record(&mut appended, &clusters, vertices.iter(), tri);
            assert_eq!(placed.is_ok(), result.is_ok(), "{cut:?}");
            assert_eq!(
                &appended[16..],
                bytemuck::cast_slice::<u32, u8>(&out),
                "{cut:?}"
            );
        }
        // A buffer of the wrong length is refused.
        let mut short = vec![0u32; header.record_len() / 4 - 1];
        assert!(header
            .write_record(bytemuck::cast_slice_mut(&mut short), &clusters, |_, _| {})
            .is_err());
    }
}
