//! Cooked mesh sets (tag [`crate::RecordTag::MESH_COOKED_SET`], set version 3): every
//! part of one model in one record, identical parts stored once, parts of one vertex
//! layout cooked together into one record where that is smaller, and the records
//! either stored as they are or compressed together in one zstd frame, so small parts
//! share what they have in common and pay no per-stream frames or headers.
//!
//! ```text
//! header              u8 version, u8 part entry width, u8 length entry width,
//!                     u8 body codec, then varints: part count, record count,
//!                     slot count, body bytes stored, body bytes decoded
//! part table          part_count entries (1, 2 or 4 bytes): the slot each part
//!                     draws; or (entry width 0) runs: a varint count, then per run
//!                     varints slot and length (parts drawing one slot in turn)
//! slot table          per record: a varint count of its slots (at least 1), then
//!                     per slot a varint: its triangles
//! record lengths      record_count entries (2 or 4 bytes): each record's bytes
//!                     inside the body
//! body                the records back to back, each in the compact form
//!                     (`compact_record`: a varint header, then the streams of a
//!                     cooked version 2 record), raw or one zstd frame
//! ```
//!
//! A slot is a range of one record's triangles, following those of the record's
//! slots before it ([`PartSpan`]), so a renderer uploads each record once and draws
//! a part as an index range of it. A record of several slots holds parts cooked
//! together ([`crate::CookConfig::merge_parts`]): their positions share one grid
//! over all of those parts' bounds (as a single mesh of that extent would), their
//! uvs one range, and vertices they have alike are stored once (as glTF primitives
//! share a vertex buffer). Parts that cook to the same bytes (a glTF mesh used by
//! several nodes, repeated primitives, identical geometry after quantisation) name
//! the same slot. The writer keeps the smaller of the parts cooked apart and the
//! parts cooked together, and for each the smallest of: records with their own
//! entropy layer, stored raw; records without it in one zstd frame; records with it
//! in one zstd frame. Entries are as narrow as the largest value needs, so a set of
//! small parts pays a few bytes of tables. Versions 1 and 2 are refused as
//! [`FormatError::WrongVersion`].
//!
//! Allocation: the body's decoded size is declared and bounded by [`MAX_EXPANSION`]
//! times its stored size before anything is allocated; the tables are in the record,
//! so their counts are bounded by its length. A record's slots are checked against
//! its triangle count when the record is read.

use crate::cooked::{EXPANSION_SLACK, MAX_EXPANSION};
use crate::varint::Reader;
use crate::{CookedMesh, DecodeScratch, FormatError, MeshData, Section, Stream};

/// The set layout this reader knows (`CookedSetHeader::version`).
pub const SET_VERSION: u32 = 3;

/// How a set's body is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SetCodec {
    /// The records back to back.
    Raw = 0,
    /// The records back to back, as one zstd frame.
    Zstd = 1,
}

/// Header of a cooked mesh set, as parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookedSetHeader {
    /// [`SET_VERSION`]; a reader refuses any other.
    pub version: u32,
    /// Parts of the model (entries of the part table).
    pub part_count: u32,
    /// Distinct records in the body.
    pub record_count: u32,
    /// Slots of the records (ranges parts draw), at least one per record.
    pub slot_count: u32,
    /// A [`SetCodec`] value.
    pub body_codec: u32,
    /// Body bytes stored in the record.
    pub body_stored_len: u32,
    /// Body bytes once the codec is undone (the sum of the record lengths).
    pub body_len: u32,
    /// Bytes per part table entry (1, 2 or 4): the slot a part draws; 0: the table
    /// is runs of parts drawing one slot.
    pub part_width: u8,
    /// Bytes per record length entry (2 or 4).
    pub length_width: u8,
}

/// A cooked mesh set, its header and tables validated; the records are checked as
/// they are decoded.
///
/// A cooked LOD chain (`farsight cook mesh --lod-chain --cooked`) is a version 2
/// file ([`crate::Version::Cooked`]) whose manifest lists levels of sub-meshes; the
/// sub-meshes of one level are the parts of one set record (tag `MSS1`), so a
/// sub-mesh entry names that record and, in `part`, which of its parts it draws (the
/// field is left out when it is 0). Files written before sets have one cooked mesh
/// record (`MSH2`) per sub-mesh instead, and no `sets` flag. A game reads such a
/// chain with this crate alone: declare the manifest fields it needs (serde skips
/// the others), then draw each sub-mesh as its part's range of the decoded record.
///
/// ```
/// use farsight_format::{
///     AlignedBytes, Container, CookedSet, FormatError, Manifest, RecordIndex, RecordTag,
///     Section, Version,
/// };
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Chain {
///     levels: Vec<Level>,
///     #[serde(default)]
///     sets: bool,
/// }
/// #[derive(Serialize, Deserialize)]
/// struct Level {
///     max_distance: f32,
///     submeshes: Vec<SubMesh>,
/// }
/// #[derive(Serialize, Deserialize)]
/// struct SubMesh {
///     material: String,
///     record: RecordIndex,
///     #[serde(default)]
///     part: u32,
/// }
/// impl Manifest for Chain {
///     fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
///         let tag = if self.sets { RecordTag::MESH_COOKED_SET } else { RecordTag::MESH_COOKED };
///         for s in self.levels.iter().flat_map(|l| &l.submeshes) {
///             visit(s.record, tag);
///         }
///     }
/// }
///
/// # use farsight_format::{cook_mesh_set, CookConfig, FileWriter, MeshData};
/// # let quad = |x: f32| MeshData {
/// #     positions: vec![[x, 0.0, 0.0], [x + 1.0, 0.0, 0.0], [x + 1.0, 1.0, 0.0], [x, 1.0, 0.0]],
/// #     uvs: vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]],
/// #     indices: vec![0, 1, 2, 0, 2, 3],
/// #     ..Default::default()
/// # };
/// # let mut w = FileWriter::new(Version::Cooked);
/// # let set = cook_mesh_set(&[quad(0.0), quad(2.0)], &CookConfig::default())?;
/// # let record = w.add_record(RecordTag::MESH_COOKED_SET, &set);
/// # let sub = |material: &str, part| SubMesh { material: material.into(), record, part };
/// # let level = Level { max_distance: 50.0, submeshes: vec![sub("wood", 0), sub("iron", 1)] };
/// # let written = w.finish(&Chain { levels: vec![level], sets: true })?;
/// # let bytes = AlignedBytes::from(&written[..]);
/// let file = Container::<Chain>::read(&bytes)?;
/// assert_eq!(file.version(), Version::Cooked);
/// for level in &file.manifest().levels {
///     for sub in &level.submeshes {
///         let set = CookedSet::parse(file.record(sub.record)?.bytes)?;
///         // A renderer uploads each record of the set once (parts share them)...
///         let records = set.decode()?;
///         // ...and draws a sub-mesh as a range of its part's record.
///         let span = set.part_span(sub.part as usize).ok_or(FormatError::BadField {
///             section: Section::Manifest,
///             field: "sub-mesh part",
///             found: sub.part as u64,
///         })?;
///         let indices = &records[span.record].indices;
///         let first = 3 * span.first_triangle as usize;
///         let drawn = &indices[first..first + 3 * span.triangle_count as usize];
///         println!("{} within {}: {} indices", sub.material, level.max_distance, drawn.len());
///         assert_eq!(drawn.len(), 6);
///     }
/// }
/// # Ok::<(), FormatError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CookedSet<'a> {
    /// The set's header.
    pub header: CookedSetHeader,
    parts: &'a [u8],
    slots: &'a [u8],
    lens: &'a [u8],
    body: &'a [u8],
}

/// A set record's header fields, checked against each other and the record's size
/// (`CookedSet::parse`, first step).
fn parse_set_header(r: &mut Reader<'_>) -> Result<CookedSetHeader, FormatError> {
    let version = r.byte()? as u32;
    if version != SET_VERSION {
        return Err(FormatError::WrongVersion {
            found: version,
            expected: SET_VERSION,
        });
    }
    let fixed = r.take(3)?;
    let (part_width, length_width, body_codec) = (fixed[0], fixed[1], fixed[2] as u32);
    if !matches!(part_width, 0 | 1 | 2 | 4) {
        return Err(bad("part entry width", part_width as u64));
    }
    if !matches!(length_width, 2 | 4) {
        return Err(bad("length entry width", length_width as u64));
    }
    let codec = match body_codec {
        0 => SetCodec::Raw,
        1 => SetCodec::Zstd,
        c => return Err(bad("body_codec", c as u64)),
    };
    let h = CookedSetHeader {
        version,
        part_count: r.varint("part_count")?,
        record_count: r.varint("record_count")?,
        slot_count: r.varint("slot_count")?,
        body_codec,
        body_stored_len: r.varint("body_stored_len")?,
        body_len: r.varint("body_len")?,
        part_width,
        length_width,
    };
    if (h.part_count == 0) != (h.record_count == 0) {
        return Err(bad("record_count", h.record_count as u64));
    }
    if h.record_count > h.slot_count {
        return Err(bad("record_count", h.record_count as u64));
    }
    if h.slot_count > h.part_count {
        return Err(bad("slot_count", h.slot_count as u64));
    }
    // Each record and each slot take at least a byte of the slot table.
    let tables = part_width as u64 * h.part_count as u64
        + length_width as u64 * h.record_count as u64
        + h.record_count as u64
        + h.slot_count as u64;
    let needed = tables + h.body_stored_len as u64;
    let available = (r.bytes.len() - r.at) as u64;
    if needed > available {
        return Err(FormatError::LengthPastEnd {
            section: Section::Stream(Stream::SetBody),
            length: needed,
            available,
        });
    }
    let (stored, decoded) = (h.body_stored_len as u64, h.body_len as u64);
    let limit = MAX_EXPANSION * stored + EXPANSION_SLACK;
    match codec {
        SetCodec::Raw if stored != decoded => return Err(bad("body_len", decoded)),
        SetCodec::Zstd if stored == 0 || decoded > limit => {
            return Err(FormatError::ExpansionTooLarge {
                stream: Stream::SetBody,
                decoded,
                stored,
                limit,
            })
        }
        _ => {}
    }
    if decoded < MIN_RECORD * h.record_count as u64 {
        return Err(bad("body_len", decoded));
    }
    Ok(h)
}

/// The part table: each part's slot, as fixed-width entries or as runs (second step).
fn parse_part_table<'a>(r: &mut Reader<'a>, h: &CookedSetHeader) -> Result<&'a [u8], FormatError> {
    let part_width = h.part_width;
    let parts = if part_width == 0 {
        // Runs: a varint count, then (slot, length) varint pairs.
        let at = r.at;
        let runs = r.varint("part runs")?;
        if runs > h.part_count {
            return Err(bad("part runs", runs as u64));
        }
        let mut covered = 0u64;
        for _ in 0..runs {
            let slot = r.varint("part slot")?;
            if slot >= h.slot_count {
                return Err(bad("part slot", slot as u64));
            }
            let len = r.varint("part run")?;
            if len == 0 {
                return Err(bad("part run", 0));
            }
            covered += len as u64;
        }
        if covered != h.part_count as u64 {
            return Err(bad("part runs", covered));
        }
        &r.bytes[at..r.at]
    } else {
        let parts = r.take(part_width as usize * h.part_count as usize)?;
        for p in 0..h.part_count as usize {
            let slot = entry(parts, part_width, p);
            if slot >= h.slot_count {
                return Err(bad("part slot", slot as u64));
            }
        }
        parts
    };
    Ok(parts)
}

/// The slot table: per record its slots' triangle counts (third step).
fn parse_slot_table<'a>(r: &mut Reader<'a>, h: &CookedSetHeader) -> Result<&'a [u8], FormatError> {
    let slots_at = r.at;
    let mut slots = 0u64;
    for _ in 0..h.record_count {
        let n = r.varint("slots")?;
        if n == 0 {
            return Err(bad("slots", 0));
        }
        slots += n as u64;
        if slots > h.slot_count as u64 {
            return Err(bad("slot_count", slots));
        }
        let mut tris = 0u64;
        for _ in 0..n {
            tris += r.varint("slot triangles")? as u64;
        }
        if tris > u32::MAX as u64 / 3 {
            return Err(bad("slot triangles", tris));
        }
    }
    if slots != h.slot_count as u64 {
        return Err(bad("slot_count", slots));
    }
    let slots = &r.bytes[slots_at..r.at];
    Ok(slots)
}

/// The record lengths and the body, checked against the header's sizes (last step).
fn parse_lengths_and_body<'a>(
    r: &mut Reader<'a>,
    h: &CookedSetHeader,
) -> Result<(&'a [u8], &'a [u8]), FormatError> {
    let (stored, decoded) = (h.body_stored_len as u64, h.body_len as u64);
    let lens = r.take(h.length_width as usize * h.record_count as usize)?;
    let body = r.rest();
    if body.len() as u64 != stored {
        return Err(if (body.len() as u64) < stored {
            FormatError::LengthPastEnd {
                section: Section::Stream(Stream::SetBody),
                length: stored,
                available: body.len() as u64,
            }
        } else {
            bad("trailing bytes in record", body.len() as u64 - stored)
        });
    }
    let mut sum = 0u64;
    for i in 0..h.record_count as usize {
        let len = entry(lens, h.length_width, i) as u64;
        if len < MIN_RECORD {
            return Err(bad("record length", len));
        }
        sum += len;
    }
    if sum != decoded {
        return Err(bad("body_len", decoded));
    }
    Ok((lens, body))
}

/// Where a part lies in its record: the record and the part's triangles, the index
/// range `3 * first_triangle .. 3 * (first_triangle + triangle_count)` of the decoded
/// record (whose indices name the record's vertices, which parts may share).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartSpan {
    /// The record (index into the set's records) the part lies in.
    pub record: usize,
    /// The part's first triangle in that record.
    pub first_triangle: u32,
    /// Its triangle count.
    pub triangle_count: u32,
}

/// The slots of a set in order, with their spans (see [`CookedSet::spans`]).
#[derive(Clone, Debug)]
pub struct Spans<'a> {
    r: Reader<'a>,
    record: usize,
    left: u32,
    first_triangle: u32,
}

impl Iterator for Spans<'_> {
    type Item = PartSpan;

    fn next(&mut self) -> Option<PartSpan> {
        // parse() read and checked the whole table, so these reads succeed.
        while self.left == 0 {
            if self.r.at >= self.r.bytes.len() {
                return None;
            }
            self.left = self.r.varint("slots").ok()?;
            self.record = self.record.wrapping_add(1);
            self.first_triangle = 0;
        }
        self.left -= 1;
        let span = PartSpan {
            record: self.record,
            first_triangle: self.first_triangle,
            triangle_count: self.r.varint("slot triangles").ok()?,
        };
        self.first_triangle += span.triangle_count;
        Some(span)
    }
}

fn bad(field: &'static str, found: u64) -> FormatError {
    FormatError::BadField {
        section: Section::RecordHeader,
        field,
        found,
    }
}

/// The triangles of `s` in record mesh `m` (which the set checked `s` covers) with
/// the vertices they use, numbered in order of first use; `local` is scratch.
fn span_mesh(m: &MeshData, s: PartSpan, local: &mut Vec<u32>) -> MeshData {
    let t = 3 * s.first_triangle as usize..3 * (s.first_triangle + s.triangle_count) as usize;
    local.clear();
    local.resize(m.positions.len(), u32::MAX);
    let mut part = MeshData::default();
    for &i in &m.indices[t] {
        let l = &mut local[i as usize];
        if *l == u32::MAX {
            *l = part.positions.len() as u32;
            let i = i as usize;
            part.positions.push(m.positions[i]);
            if !m.normals.is_empty() {
                part.normals.push(m.normals[i]);
            }
            if !m.tangents.is_empty() {
                part.tangents.push(m.tangents[i]);
            }
            if !m.uvs.is_empty() {
                part.uvs.push(m.uvs[i]);
            }
        }
        part.indices.push(*l);
    }
    part
}

/// A record's slots must cover it exactly: their triangles are its own.
fn check_slots(m: &CookedMesh<'_>, tris: u64) -> Result<(), FormatError> {
    if tris != m.triangle_count() as u64 {
        return Err(bad("slot triangles", tris));
    }
    Ok(())
}

/// Entry `i` of a table of `width`-byte little-endian entries.
fn entry(bytes: &[u8], width: u8, i: usize) -> u32 {
    let w = width as usize;
    let mut b = [0u8; 4];
    b[..w].copy_from_slice(&bytes[w * i..w * i + w]);
    u32::from_le_bytes(b)
}

/// The smallest a compact record can be: two one-byte counts, the six bit bytes,
/// the bounds, and the positions' and indices' codec and length bytes.
const MIN_RECORD: u64 = 2 + 6 + 24 + 2 * 2;

impl<'a> CookedSet<'a> {
    /// Checks the header, the part and slot tables and the record lengths; decodes
    /// nothing.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes, Section::RecordHeader);
        let h = parse_set_header(&mut r)?;
        let parts = parse_part_table(&mut r, &h)?;
        let slots = parse_slot_table(&mut r, &h)?;
        let (lens, body) = parse_lengths_and_body(&mut r, &h)?;
        Ok(Self {
            header: h,
            parts,
            slots,
            lens,
            body,
        })
    }

    /// Parts of the model.
    pub fn part_count(&self) -> usize {
        self.header.part_count as usize
    }

    /// Distinct records (each decoded once).
    pub fn record_count(&self) -> usize {
        self.header.record_count as usize
    }

    /// Every slot of the set in order (records in turn, a record's slots in turn):
    /// entry `s` is what [`Self::part_slot`] `s` names.
    pub fn spans(&self) -> Spans<'a> {
        Spans {
            r: Reader::new(self.slots, Section::RecordHeader),
            record: usize::MAX,
            left: 0,
            first_triangle: 0,
        }
    }

    /// The slot part `part` draws, or `None` past the table.
    pub fn part_slot(&self, part: usize) -> Option<usize> {
        (part < self.part_count()).then(|| self.slot_of(part))
    }

    /// Slot of part `p` (below the part count): its table entry, or the run
    /// holding it.
    fn slot_of(&self, p: usize) -> usize {
        if self.header.part_width != 0 {
            return entry(self.parts, self.header.part_width, p) as usize;
        }
        // parse() read and checked every run.
        let mut r = Reader::new(self.parts, Section::RecordHeader);
        let runs = r.varint("part runs").unwrap_or(0);
        let mut first = 0usize;
        for _ in 0..runs {
            let slot = r.varint("part slot").unwrap_or(0) as usize;
            first += r.varint("part run").unwrap_or(0) as usize;
            if p < first {
                return slot;
            }
        }
        0
    }

    /// Where part `part` lies (its record and ranges), or `None` past the table.
    /// Walks the slot table: to place every part, collect [`Self::spans`] once.
    pub fn part_span(&self, part: usize) -> Option<PartSpan> {
        self.spans().nth(self.part_slot(part)?)
    }

    /// The record part `part` draws, or `None` past the table.
    pub fn part_record(&self, part: usize) -> Option<usize> {
        self.part_span(part).map(|s| s.record)
    }

    /// The record each part draws, in part order.
    pub fn part_records(&self) -> impl Iterator<Item = usize> + '_ {
        let records: Vec<usize> = self.spans().map(|s| s.record).collect();
        (0..self.part_count()).map(move |p| records[self.slot_of(p)])
    }

    /// The body with its codec undone: `buf` holds it when it is compressed.
    pub fn body<'b>(
        &'b self,
        buf: &'b mut Vec<u8>,
        scratch: &mut DecodeScratch,
    ) -> Result<&'b [u8], FormatError> {
        if self.header.body_codec == SetCodec::Raw as u32 {
            return Ok(self.body);
        }
        let err = || FormatError::StreamDecode {
            stream: Stream::SetBody,
            codec: "zstd",
        };
        let n = self.header.body_len as usize;
        buf.clear();
        // parse() bounded body_len by MAX_EXPANSION times the stored bytes.
        buf.reserve(n);
        let z = crate::decode::zstd_context(&mut scratch.zstd).map_err(|_| err())?;
        let got = z.decompress_to_buffer(self.body, buf).map_err(|_| err())?;
        if got != n {
            return Err(err());
        }
        Ok(&buf[..])
    }

    /// Record `r` of a body returned by [`Self::body`], parsed, its slots checked
    /// against its counts.
    pub fn record<'b>(&self, body: &'b [u8], r: usize) -> Result<CookedMesh<'b>, FormatError> {
        if r >= self.record_count() || body.len() != self.header.body_len as usize {
            return Err(bad("record", r as u64));
        }
        let at: usize = (0..r).map(|i| self.record_len(i)).sum();
        let m = CookedMesh::parse_compact(&body[at..at + self.record_len(r)])?;
        let tris: u64 = self
            .spans()
            .filter(|s| s.record == r)
            .map(|s| s.triangle_count as u64)
            .sum();
        check_slots(&m, tris)?;
        Ok(m)
    }

    fn record_len(&self, r: usize) -> usize {
        entry(self.lens, self.header.length_width, r) as usize
    }

    /// Decodes every record once into `out` (one mesh per record; a part draws the
    /// range [`Self::part_span`] gives of its record), reusing the meshes `out`
    /// already holds and `scratch`: once both have grown, decoding allocates nothing.
    /// On an error `out` is left empty.
    pub fn decode_into(
        &self,
        out: &mut Vec<MeshData>,
        scratch: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        let mut buf = std::mem::take(&mut scratch.set_body);
        let result = self.decode_records(&mut buf, out, scratch);
        scratch.set_body = buf;
        if result.is_err() {
            out.clear();
        }
        result
    }

    fn decode_records(
        &self,
        buf: &mut Vec<u8>,
        out: &mut Vec<MeshData>,
        scratch: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        let n = self.record_count();
        out.truncate(n);
        out.resize_with(n, MeshData::default);
        let body = self.body(buf, scratch)?;
        let mut at = 0usize;
        let mut spans = self.spans().peekable();
        for (r, mesh) in out.iter_mut().enumerate() {
            let len = self.record_len(r);
            let m = CookedMesh::parse_compact(&body[at..at + len])?;
            let mut tris = 0u64;
            while let Some(s) = spans.next_if(|s| s.record == r) {
                tris += s.triangle_count as u64;
            }
            check_slots(&m, tris)?;
            m.decode_into(mesh, scratch)?;
            at += len;
        }
        Ok(())
    }

    /// Decodes every part into a mesh of its own, in part order: its triangles
    /// with the vertices they use, numbered in order of first use.
    pub fn decode_parts(&self) -> Result<Vec<MeshData>, FormatError> {
        let records = self.decode()?;
        let spans: Vec<PartSpan> = self.spans().collect();
        let mut local = Vec::new();
        Ok((0..self.part_count())
            .map(|p| {
                let s = spans[self.slot_of(p)];
                span_mesh(&records[s.record], s, &mut local)
            })
            .collect())
    }

    /// Decodes part `part` alone (its record, then its range of it, as
    /// [`Self::decode_parts`] gives it).
    pub fn decode_part(&self, part: usize) -> Result<MeshData, FormatError> {
        let s = self.part_span(part).ok_or(bad("part", part as u64))?;
        let mut scratch = DecodeScratch::default();
        let mut buf = Vec::new();
        let body = self.body(&mut buf, &mut scratch)?;
        let mut m = MeshData::default();
        self.record(body, s.record)?
            .decode_into(&mut m, &mut scratch)?;
        Ok(span_mesh(&m, s, &mut Vec::new()))
    }

    /// Decodes every record into new meshes, one per record.
    pub fn decode(&self) -> Result<Vec<MeshData>, FormatError> {
        let mut out = Vec::new();
        self.decode_into(&mut out, &mut DecodeScratch::default())?;
        Ok(out)
    }
}

/// Cooks the parts of one model into a set record (see the module docs): identical
/// parts stored once; the parts cooked apart (each as [`crate::cook_mesh`] would,
/// parts that cook to the same bytes stored once) and, with
/// [`crate::CookConfig::merge_parts`], cooked together (the distinct parts of each
/// vertex layout in one record), the smaller kept; the body stored the smallest
/// way. Where the smaller is over [`crate::CookConfig::decode_budget`], the faster
/// of each pair within [`crate::CookConfig::speed_growth`] is kept instead. Parts
/// are cooked on the rayon pool; the bytes do not depend on the thread count.
#[cfg(feature = "encode")]
pub fn cook_mesh_set(parts: &[MeshData], opts: &crate::CookConfig) -> Result<Vec<u8>, FormatError> {
    // Identical inputs cook alike: cook each distinct input once.
    let mut first_of: Vec<usize> = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        let same = (0..i).find(|&j| first_of[j] == j && parts[j] == *p);
        first_of.push(same.unwrap_or(i));
    }
    let distinct: Vec<usize> = (0..parts.len()).filter(|&i| first_of[i] == i).collect();
    let mut best = encode_layout(&layout_apart(parts, &first_of, &distinct, opts)?, opts)?;
    if opts.merge_parts {
        if let Some(together) = layout_together(parts, &first_of, &distinct, opts)? {
            let other = encode_layout(&together, opts)?;
            // The smaller, unless it is over the decode budget and the other is
            // faster within the growth allowed.
            let (small, large) = if other.0.len() < best.0.len() {
                (other, best)
            } else {
                (best, other)
            };
            let over = opts.decode_budget > 0.0 && small.1 > opts.decode_budget * small.2;
            let limit = small.0.len() as f64 * (1.0 + opts.speed_growth.max(0.0));
            best = if over && large.1 < small.1 && large.0.len() as f64 <= limit {
                large
            } else {
                small
            };
        }
    }
    Ok(best.0)
}

/// The records of a set in each form the writer weighs, with their slots (the
/// triangles of each slot, per record).
#[cfg(feature = "encode")]
struct Layout {
    /// Without the entropy layer, full form.
    plain_full: Vec<Vec<u8>>,
    /// Without the entropy layer, compact.
    plain: Vec<Vec<u8>>,
    plain_slots: Vec<Vec<u32>>,
    /// With it, compact (empty when the options turn it off).
    coded: Vec<Vec<u8>>,
    coded_slots: Vec<Vec<u32>>,
    /// The slot each part draws.
    part_slot: Vec<u32>,
}

#[cfg(feature = "encode")]
impl Layout {
    /// The layout of records in their full forms (`coded_full` empty without the
    /// entropy layer), their compact forms derived.
    fn new(
        plain_full: Vec<Vec<u8>>,
        plain_slots: Vec<Vec<u32>>,
        coded_full: &[Vec<u8>],
        coded_slots: Vec<Vec<u32>>,
        part_slot: Vec<u32>,
    ) -> Result<Self, FormatError> {
        let compact_all = |full: &[Vec<u8>]| {
            full.iter()
                .map(|f| compact(f))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            plain: compact_all(&plain_full)?,
            coded: compact_all(coded_full)?,
            plain_full,
            plain_slots,
            coded_slots,
            part_slot,
        })
    }
}

/// The one slot of a record that holds one part.
#[cfg(feature = "encode")]
fn whole_slot(full: &[u8]) -> Result<Vec<u32>, FormatError> {
    Ok(vec![CookedMesh::parse(full)?.triangle_count()])
}

/// Each distinct part cooked on its own; parts whose records are the same bytes
/// share one.
#[cfg(feature = "encode")]
fn layout_apart(
    parts: &[MeshData],
    first_of: &[usize],
    distinct: &[usize],
    opts: &crate::CookConfig,
) -> Result<Layout, FormatError> {
    use rayon::prelude::*;
    use std::collections::HashMap;

    let plain_opts = crate::CookConfig {
        entropy: false,
        ..*opts
    };
    let plain_full: Vec<Vec<u8>> = distinct
        .par_iter()
        .map(|&i| crate::cook_mesh(&parts[i], &plain_opts))
        .collect::<Result<_, _>>()?;
    // Parts whose records are the same bytes (alike after quantisation).
    let mut record_of_bytes: HashMap<&[u8], u32> = HashMap::new();
    let mut record_of_distinct = Vec::with_capacity(distinct.len());
    let mut records: Vec<usize> = Vec::new(); // index into `distinct`
    for (d, bytes) in plain_full.iter().enumerate() {
        let next = records.len() as u32;
        let r = *record_of_bytes.entry(bytes.as_slice()).or_insert(next);
        if r == next {
            records.push(d);
        }
        record_of_distinct.push(r);
    }
    let part_slot = first_of
        .iter()
        .map(|&f| record_of_distinct[distinct.binary_search(&f).expect("a distinct part")])
        .collect();
    // Each record's full form, moved out of the distinct parts' (records name
    // distinct parts once each).
    let mut plain_full: Vec<Option<Vec<u8>>> = plain_full.into_iter().map(Some).collect();
    let plain_full: Vec<Vec<u8>> = records
        .iter()
        .map(|&d| plain_full[d].take().expect("a record names its part once"))
        .collect();
    let plain_slots = plain_full
        .iter()
        .map(|f| whole_slot(f))
        .collect::<Result<_, _>>()?;
    let coded_full: Vec<Vec<u8>> = if opts.entropy {
        records
            .par_iter()
            .map(|&d| crate::cook_mesh(&parts[distinct[d]], opts))
            .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let coded_slots = coded_full
        .iter()
        .map(|f| whole_slot(f))
        .collect::<Result<_, _>>()?;
    Layout::new(plain_full, plain_slots, &coded_full, coded_slots, part_slot)
}

/// The distinct parts of each vertex layout (which attributes they have) cooked
/// together into one record, or `None` when no two parts share a layout.
#[cfg(feature = "encode")]
fn layout_together(
    parts: &[MeshData],
    first_of: &[usize],
    distinct: &[usize],
    opts: &crate::CookConfig,
) -> Result<Option<Layout>, FormatError> {
    use rayon::prelude::*;

    let key = |m: &MeshData| {
        (
            m.normals.is_empty(),
            m.tangents.is_empty(),
            m.uvs.is_empty(),
        )
    };
    // Groups in order of their first part; each a list of distinct parts.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut keys = Vec::new();
    let mut slot_of = vec![0u32; parts.len()];
    for &d in distinct {
        let k = key(&parts[d]);
        let g = keys.iter().position(|&q| q == k).unwrap_or_else(|| {
            keys.push(k);
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(d);
    }
    if groups.iter().all(|g| g.len() < 2) {
        return Ok(None);
    }
    let mut next = 0u32;
    for g in &groups {
        for &d in g {
            slot_of[d] = next;
            next += 1;
        }
    }
    let plain_opts = crate::CookConfig {
        entropy: false,
        ..*opts
    };
    // Each group's record and its slots' triangles.
    type Cooked = Vec<(Vec<u8>, Vec<u32>)>;
    let cook = |o: &crate::CookConfig| -> Result<Cooked, FormatError> {
        groups
            .par_iter()
            .map(|g| {
                let members: Vec<&MeshData> = g.iter().map(|&d| &parts[d]).collect();
                crate::cook::cook_mesh_parts(&members, o)
            })
            .collect()
    };
    let (plain_full, plain_slots): (Vec<_>, Vec<_>) = cook(&plain_opts)?.into_iter().unzip();
    let (coded_full, coded_slots): (Vec<_>, Vec<_>) = if opts.entropy {
        cook(opts)?.into_iter().unzip()
    } else {
        (Vec::new(), Vec::new())
    };
    let part_slot = first_of.iter().map(|&f| slot_of[f]).collect();
    Layout::new(plain_full, plain_slots, &coded_full, coded_slots, part_slot).map(Some)
}

/// The estimated decode time of compact records (see `cost.rs`).
#[cfg(feature = "encode")]
fn records_ns(records: &[Vec<u8>]) -> f64 {
    records
        .iter()
        .map(|r| CookedMesh::parse_compact(r).map_or(0.0, |m| m.estimated_decode_ns()))
        .sum()
}

/// The triangles of a compact record.
#[cfg(feature = "encode")]
fn record_triangles(record: &[u8]) -> f64 {
    CookedMesh::parse_compact(record).map_or(0.0, |m| m.triangle_count() as f64)
}

/// A layout written as a set record, its body the smallest of the candidates (see
/// the module docs) or, over [`crate::CookConfig::decode_budget`], the fastest
/// within [`crate::CookConfig::speed_growth`] of the smallest. Returns the record,
/// its estimated decode time and the triangles it decodes.
#[cfg(feature = "encode")]
fn encode_layout(
    layout: &Layout,
    opts: &crate::CookConfig,
) -> Result<(Vec<u8>, f64, f64), FormatError> {
    let mut candidates = body_candidates(layout, opts)?;
    let (pick, triangles) = pick_body(&candidates, layout, opts);
    let (codec, body, lens, slots, estimated_ns) = candidates.swap_remove(pick);
    let out = write_set(codec, &body, &lens, slots, &layout.part_slot)?;
    Ok((out, estimated_ns, triangles))
}

/// A candidate body of a set: its codec, stored bytes, each record's decoded
/// length, each record's slots and the estimated decode time.
#[cfg(feature = "encode")]
type Candidate<'a> = (SetCodec, Vec<u8>, Vec<u32>, &'a Vec<Vec<u32>>, f64);

/// Every body the reader accepts for `layout`: the plain records raw, and with the
/// entropy layer the coded records raw, either in one zstd frame, and the records
/// with raw vertex streams in one frame.
#[cfg(feature = "encode")]
fn body_candidates<'a>(
    layout: &'a Layout,
    opts: &crate::CookConfig,
) -> Result<Vec<Candidate<'a>>, FormatError> {
    use rayon::prelude::*;

    let zstd = |body: &[u8]| {
        crate::coding::zstd_frame(body, opts.zstd_level, None).ok_or(FormatError::BadInput {
            what: "zstd compression failed",
            found: body.len() as u64,
        })
    };
    let fits = |stored: usize, decoded: usize| {
        stored > 0 && decoded as u64 <= MAX_EXPANSION * stored as u64 + EXPANSION_SLACK
    };
    let join = |recs: &[Vec<u8>]| -> Vec<u8> { recs.concat() };
    // Each candidate body with its estimated decode time (its frame, if any, and
    // its records: `cost.rs`).
    let estimate = |codec: SetCodec, body: &[u8], records: &[Vec<u8>]| {
        let frame = match codec {
            SetCodec::Zstd => {
                crate::cost::zstd_frame_ns(body.len(), records.iter().map(Vec::len).sum())
            }
            SetCodec::Raw => 0.0,
        };
        frame + records_ns(records)
    };
    let plain_body = join(&layout.plain);
    let mut candidates: Vec<Candidate<'_>> = vec![(
        SetCodec::Raw,
        plain_body.clone(),
        lengths(&layout.plain),
        &layout.plain_slots,
        estimate(SetCodec::Raw, &plain_body, &layout.plain),
    )];
    if opts.entropy {
        let mut offer = |codec: SetCodec, body: Vec<u8>, records: &[Vec<u8>], slots| {
            let decoded = records.iter().map(Vec::len).sum();
            if codec == SetCodec::Raw || fits(body.len(), decoded) {
                let ns = estimate(codec, &body, records);
                candidates.push((codec, body, lengths(records), slots, ns));
            }
        };
        let coded_body = join(&layout.coded);
        offer(
            SetCodec::Raw,
            coded_body.clone(),
            &layout.coded,
            &layout.coded_slots,
        );
        offer(
            SetCodec::Zstd,
            zstd(&plain_body)?,
            &layout.plain,
            &layout.plain_slots,
        );
        offer(
            SetCodec::Zstd,
            zstd(&coded_body)?,
            &layout.coded,
            &layout.coded_slots,
        );
        // The records without entropy layer, their vertex streams raw, in one frame.
        let raw_vertex: Vec<Vec<u8>> = layout
            .plain_full
            .par_iter()
            .zip(&layout.plain)
            .map(
                |(full, plain)| match crate::cooked::raw_vertex_streams(full)? {
                    Some(raw) => compact(&raw),
                    None => Ok(plain.clone()),
                },
            )
            .collect::<Result<_, _>>()?;
        let raw_vertex_body = join(&raw_vertex);
        offer(
            SetCodec::Zstd,
            zstd(&raw_vertex_body)?,
            &raw_vertex,
            &layout.plain_slots,
        );
    }
    Ok(candidates)
}

/// The candidate to store: by size, or over the decode budget the fastest within the
/// growth allowed; with the triangles the layout decodes.
#[cfg(feature = "encode")]
fn pick_body(
    candidates: &[Candidate<'_>],
    layout: &Layout,
    opts: &crate::CookConfig,
) -> (usize, f64) {
    // By size, the first of the smallest; a body frame costs decode time over all
    // the records, so it must save a sixteenth (pirate's records, each stream
    // already entropy coded, saved 0.8 % in a frame that took 7 of its 33 ns per
    // triangle).
    let sized = |c: &Candidate<'_>| match c.0 {
        SetCodec::Zstd => c.1.len() + c.1.len() / 15,
        SetCodec::Raw => c.1.len(),
    };
    let mut pick = 0;
    for (i, c) in candidates.iter().enumerate() {
        if sized(c) < sized(&candidates[pick]) {
            pick = i;
        }
    }
    // Over the decode budget: the fastest within the growth allowed (the first on
    // a tie).
    let triangles: f64 = layout.plain.iter().map(|r| record_triangles(r)).sum();
    if opts.decode_budget > 0.0 && candidates[pick].4 > opts.decode_budget * triangles {
        let smallest = candidates.iter().map(|c| c.1.len()).min().unwrap_or(0);
        let limit = smallest as f64 * (1.0 + opts.speed_growth.max(0.0));
        for (i, c) in candidates.iter().enumerate() {
            if c.1.len() as f64 <= limit && c.4 < candidates[pick].4 {
                pick = i;
            }
        }
    }
    (pick, triangles)
}

/// The set record: its header, the part table (or its runs), the slots, the record
/// lengths and the body.
#[cfg(feature = "encode")]
fn write_set(
    codec: SetCodec,
    body: &[u8],
    lens: &[u32],
    slots: &[Vec<u32>],
    parts: &[u32],
) -> Result<Vec<u8>, FormatError> {
    let decoded: usize = lens.iter().map(|&l| l as usize).sum();
    let too_big = |what, n: usize| FormatError::BadInput {
        what,
        found: n as u64,
    };
    let part_count =
        u32::try_from(parts.len()).map_err(|_| too_big("too many parts", parts.len()))?;
    let body_stored_len =
        u32::try_from(body.len()).map_err(|_| too_big("set body over 4 GiB", body.len()))?;
    let body_len = u32::try_from(decoded).map_err(|_| too_big("set body over 4 GiB", decoded))?;
    let slot_count: usize = slots.iter().map(Vec::len).sum();
    let part_width: u8 = match slot_count {
        0..=256 => 1,
        257..=65536 => 2,
        _ => 4,
    };
    let length_width: u8 = if lens.iter().all(|&l| l <= u16::MAX as u32) {
        2
    } else {
        4
    };
    // The part table as runs of one slot where that is shorter (parts placing one
    // geometry many times).
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &p in parts {
        match runs.last_mut() {
            Some((slot, len)) if *slot == p => *len += 1,
            _ => runs.push((p, 1)),
        }
    }
    let mut run_table = Vec::new();
    crate::varint::put(&mut run_table, runs.len() as u32);
    for &(slot, len) in &runs {
        crate::varint::put(&mut run_table, slot);
        crate::varint::put(&mut run_table, len);
    }
    let part_width = if run_table.len() < part_width as usize * parts.len() {
        0
    } else {
        part_width
    };
    let mut out = Vec::with_capacity(
        20 + part_width as usize * parts.len()
            + run_table.len()
            + 2 * slot_count
            + length_width as usize * lens.len()
            + body.len(),
    );
    out.extend_from_slice(&[SET_VERSION as u8, part_width, length_width, codec as u8]);
    for v in [
        part_count,
        lens.len() as u32,
        slot_count as u32,
        body_stored_len,
        body_len,
    ] {
        crate::varint::put(&mut out, v);
    }
    if part_width == 0 {
        out.extend_from_slice(&run_table);
    } else {
        for &p in parts {
            out.extend_from_slice(&p.to_le_bytes()[..part_width as usize]);
        }
    }
    for record in slots {
        crate::varint::put(&mut out, record.len() as u32);
        for &t in record {
            crate::varint::put(&mut out, t);
        }
    }
    for &l in lens {
        out.extend_from_slice(&l.to_le_bytes()[..length_width as usize]);
    }
    out.extend_from_slice(body);
    Ok(out)
}

/// A cooked record in the compact form sets store.
#[cfg(feature = "encode")]
fn compact(full: &[u8]) -> Result<Vec<u8>, FormatError> {
    crate::compact_record(full)?.ok_or(FormatError::BadInput {
        what: "a cooked record the compact form cannot hold",
        found: full.len() as u64,
    })
}

#[cfg(feature = "encode")]
fn lengths(records: &[Vec<u8>]) -> Vec<u32> {
    records.iter().map(|r| r.len() as u32).collect()
}
