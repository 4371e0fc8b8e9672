//! Full-precision mesh records (version 1; `docs/design/baked-buildings.md#the-full-and-cooked-files`).
//!
//! ```text
//! FullMeshHeader                               48 bytes
//! positions   [f32; 3] x vertex_count          each array starts 16-byte aligned
//! normals     [f32; 3] x vertex_count          (if HAS_NORMALS)
//! uvs         [f32; 2] x vertex_count          (if HAS_UVS)
//! indices     u32      x index_count
//! provenance  u32      x index_count / 3       (if HAS_PROVENANCE)
//! ```
//!
//! Attributes narrow to f32 on disk (they narrow to f32 on the way to a GPU anyway);
//! indices and provenance are stored as written. The arrays are read in place.

use bytemuck::{Pod, Zeroable};

use crate::{FormatError, Section, Stream};

/// A mesh in memory: the input of every writer and the output of every decoder.
/// An empty attribute vector means the attribute is absent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeshData {
    /// Vertex positions.
    pub positions: Vec<[f32; 3]>,
    /// Vertex normals (unit length), or empty.
    pub normals: Vec<[f32; 3]>,
    /// xyz direction, w handedness (+1 or -1).
    pub tangents: Vec<[f32; 4]>,
    /// Texture coordinates, or empty.
    pub uvs: Vec<[f32; 2]>,
    /// Triangle list.
    pub indices: Vec<u32>,
    /// Per triangle: which source face it came from (producer-defined).
    pub provenance: Vec<u32>,
}

impl MeshData {
    /// Triangles in the index list.
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    /// Empties every array, keeping capacity (decoders reuse a `MeshData`).
    pub fn clear(&mut self) {
        self.positions.clear();
        self.normals.clear();
        self.tangents.clear();
        self.uvs.clear();
        self.indices.clear();
        self.provenance.clear();
    }

    /// Checks what a writer relies on: attribute lengths agree, whole triangles,
    /// indices in range, finite floats.
    pub fn validate(&self) -> Result<(), FormatError> {
        let n = self.positions.len();
        let bad = |what, found: usize| {
            Err(FormatError::BadInput {
                what,
                found: found as u64,
            })
        };
        if u32::try_from(n).is_err() || u32::try_from(self.indices.len()).is_err() {
            return bad("more than u32::MAX vertices or indices", n);
        }
        for (len, what) in [
            (
                self.normals.len(),
                "normals length is neither 0 nor the vertex count",
            ),
            (
                self.tangents.len(),
                "tangents length is neither 0 nor the vertex count",
            ),
            (
                self.uvs.len(),
                "uvs length is neither 0 nor the vertex count",
            ),
        ] {
            if len != 0 && len != n {
                return bad(what, len);
            }
        }
        if self.indices.len() % 3 != 0 {
            return bad("index count is not a multiple of 3", self.indices.len());
        }
        if !self.provenance.is_empty() && self.provenance.len() != self.indices.len() / 3 {
            return bad(
                "provenance length is neither 0 nor the triangle count",
                self.provenance.len(),
            );
        }
        if let Some((position, &index)) = self
            .indices
            .iter()
            .enumerate()
            .find(|(_, &i)| i as usize >= n)
        {
            return Err(FormatError::VertexIndexOutOfRange {
                position: position as u64,
                index,
                vertex_count: n as u32,
            });
        }
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        for (ok, what) in [
            (self.positions.iter().all(|p| finite(p)), "a position"),
            (self.normals.iter().all(|p| finite(p)), "a normal"),
            (self.tangents.iter().all(|p| finite(p)), "a tangent"),
            (self.uvs.iter().all(|p| finite(p)), "a uv"),
        ] {
            if !ok {
                return Err(FormatError::NonFinite { what });
            }
        }
        Ok(())
    }
}

/// Header of a full-precision mesh record.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct FullMeshHeader {
    /// Vertices in the record.
    pub vertex_count: u32,
    /// Indices in the record (three per triangle).
    pub index_count: u32,
    /// [`FullMeshHeader::HAS_NORMALS`] | `HAS_UVS` | `HAS_PROVENANCE`.
    pub flags: u32,
    /// Zero.
    pub reserved: u32,
    /// Bounds of the positions, so a loader knows the box without scanning.
    pub bounds_min: [f32; 3],
    /// The bounds' maximum corner.
    pub bounds_max: [f32; 3],
    /// Zero.
    pub reserved2: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<FullMeshHeader>() == 48);

impl FullMeshHeader {
    /// The record has normals.
    pub const HAS_NORMALS: u32 = 1;
    /// The record has uvs.
    pub const HAS_UVS: u32 = 2;
    /// The record has provenance (a source face per triangle).
    pub const HAS_PROVENANCE: u32 = 4;
}

/// A full-precision mesh borrowed from record bytes.
#[derive(Clone, Copy, Debug)]
pub struct FullMesh<'a> {
    /// The record's header.
    pub header: FullMeshHeader,
    /// Vertex positions.
    pub positions: &'a [[f32; 3]],
    /// Vertex normals, or empty.
    pub normals: &'a [[f32; 3]],
    /// Texture coordinates, or empty.
    pub uvs: &'a [[f32; 2]],
    /// Triangle list.
    pub indices: &'a [u32],
    /// Source face per triangle, or empty.
    pub provenance: &'a [u32],
}

/// Byte ranges of the arrays for a header: (start, len) each, and the record length.
fn layout(h: &FullMeshHeader) -> ([(u64, u64); 5], u64) {
    let n = h.vertex_count as u64;
    let lens = [
        n * 12,
        if h.flags & FullMeshHeader::HAS_NORMALS != 0 {
            n * 12
        } else {
            0
        },
        if h.flags & FullMeshHeader::HAS_UVS != 0 {
            n * 8
        } else {
            0
        },
        h.index_count as u64 * 4,
        if h.flags & FullMeshHeader::HAS_PROVENANCE != 0 {
            h.index_count as u64 / 3 * 4
        } else {
            0
        },
    ];
    let mut at = 48u64;
    let mut out = [(0, 0); 5];
    for (o, len) in out.iter_mut().zip(lens) {
        *o = (at, len);
        at = (at + len).div_ceil(16) * 16;
    }
    let end = out[4].0 + out[4].1;
    (out, end)
}

/// Writes a full-precision record. Tangents are not stored (version 1 keeps what the
/// producer made; tangents are generated when cooking).
pub fn encode_full(mesh: &MeshData) -> Result<Vec<u8>, FormatError> {
    mesh.validate()?;
    let (min, max) = bounds(&mesh.positions);
    let mut flags = 0;
    if !mesh.normals.is_empty() {
        flags |= FullMeshHeader::HAS_NORMALS;
    }
    if !mesh.uvs.is_empty() {
        flags |= FullMeshHeader::HAS_UVS;
    }
    if !mesh.provenance.is_empty() {
        flags |= FullMeshHeader::HAS_PROVENANCE;
    }
    let h = FullMeshHeader {
        vertex_count: mesh.positions.len() as u32,
        index_count: mesh.indices.len() as u32,
        flags,
        reserved: 0,
        bounds_min: min,
        bounds_max: max,
        reserved2: [0; 2],
    };
    let (ranges, end) = layout(&h);
    let mut out = vec![0u8; end as usize];
    out[..48].copy_from_slice(bytemuck::bytes_of(&h));
    let arrays: [&[u8]; 5] = [
        bytemuck::cast_slice(&mesh.positions),
        bytemuck::cast_slice(&mesh.normals),
        bytemuck::cast_slice(&mesh.uvs),
        bytemuck::cast_slice(&mesh.indices),
        bytemuck::cast_slice(&mesh.provenance),
    ];
    for ((start, len), a) in ranges.iter().zip(arrays) {
        out[*start as usize..(*start + *len) as usize].copy_from_slice(a);
    }
    Ok(out)
}

/// Axis-aligned bounds of points; `([0; 3], [0; 3])` for none.
pub(crate) fn bounds(points: &[[f32; 3]]) -> ([f32; 3], [f32; 3]) {
    if points.is_empty() {
        return ([0.0; 3], [0.0; 3]);
    }
    let mut min = [f32::INFINITY; 3];
    let mut max = [f32::NEG_INFINITY; 3];
    for p in points {
        for i in 0..3 {
            min[i] = min[i].min(p[i]);
            max[i] = max[i].max(p[i]);
        }
    }
    (min, max)
}

impl<'a> FullMesh<'a> {
    /// Validates a full-precision record and borrows its arrays (bytes must be
    /// 4-byte aligned, as records of a file in [`crate::AlignedBytes`] are).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        if bytes.len() < 48 {
            return Err(FormatError::Truncated {
                section: Section::RecordHeader,
                needed: 48,
                available: bytes.len() as u64,
            });
        }
        let h: FullMeshHeader = bytemuck::pod_read_unaligned(&bytes[..48]);
        if h.flags & !7 != 0 {
            return Err(FormatError::BadField {
                section: Section::RecordHeader,
                field: "flags",
                found: h.flags as u64,
            });
        }
        if h.reserved != 0 || h.reserved2 != [0; 2] {
            return Err(FormatError::NonZeroPadding {
                section: Section::RecordHeader,
                offset: 12,
            });
        }
        if h.index_count % 3 != 0 {
            return Err(FormatError::BadField {
                section: Section::RecordHeader,
                field: "index_count",
                found: h.index_count as u64,
            });
        }
        let (r, end) = layout(&h);
        if end != bytes.len() as u64 {
            return Err(FormatError::LengthPastEnd {
                section: Section::RecordHeader,
                length: end,
                available: bytes.len() as u64,
            });
        }
        let mis = |_| FormatError::Misaligned {
            what: "full mesh record",
        };
        let slice = |i: usize| &bytes[r[i].0 as usize..(r[i].0 + r[i].1) as usize];
        let m = FullMesh {
            header: h,
            positions: bytemuck::try_cast_slice(slice(0)).map_err(mis)?,
            normals: bytemuck::try_cast_slice(slice(1)).map_err(mis)?,
            uvs: bytemuck::try_cast_slice(slice(2)).map_err(mis)?,
            indices: bytemuck::try_cast_slice(slice(3)).map_err(mis)?,
            provenance: bytemuck::try_cast_slice(slice(4)).map_err(mis)?,
        };
        // Gaps between arrays are zero, so every byte is accounted for.
        for i in 0..5 {
            let gap_end = if i + 1 < 5 { r[i + 1].0 } else { end };
            let gap = &bytes[(r[i].0 + r[i].1) as usize..gap_end as usize];
            if let Some(p) = gap.iter().position(|&b| b != 0) {
                return Err(FormatError::NonZeroPadding {
                    section: Section::Stream(Stream::Positions),
                    offset: r[i].0 + r[i].1 + p as u64,
                });
            }
        }
        if let Some((position, &index)) = m
            .indices
            .iter()
            .enumerate()
            .find(|(_, &i)| i >= h.vertex_count)
        {
            return Err(FormatError::VertexIndexOutOfRange {
                position: position as u64,
                index,
                vertex_count: h.vertex_count,
            });
        }
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        if !finite(bytemuck::cast_slice(m.positions))
            || !finite(bytemuck::cast_slice(m.normals))
            || !finite(bytemuck::cast_slice(m.uvs))
        {
            return Err(FormatError::NonFinite {
                what: "full mesh attribute",
            });
        }
        if (min_max_differs(bounds(m.positions), (h.bounds_min, h.bounds_max)))
            && h.vertex_count > 0
        {
            return Err(FormatError::BadField {
                section: Section::RecordHeader,
                field: "bounds",
                found: 0,
            });
        }
        Ok(m)
    }

    /// Copies into an owned mesh.
    pub fn to_mesh(&self) -> MeshData {
        MeshData {
            positions: self.positions.to_vec(),
            normals: self.normals.to_vec(),
            tangents: Vec::new(),
            uvs: self.uvs.to_vec(),
            indices: self.indices.to_vec(),
            provenance: self.provenance.to_vec(),
        }
    }
}

fn min_max_differs(a: ([f32; 3], [f32; 3]), b: ([f32; 3], [f32; 3])) -> bool {
    a.0 != b.0 || a.1 != b.1
}
