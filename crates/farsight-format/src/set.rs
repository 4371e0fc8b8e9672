//! Cooked mesh sets (tag [`crate::RecordTag::MESH_COOKED_SET`], set version 2): every
//! part of one model in one record, identical parts stored once, and the parts'
//! cooked records either stored as they are or compressed together in one zstd frame,
//! so small parts share what they have in common and pay no per-stream frames.
//!
//! ```text
//! header              u8 version, u8 part entry width, u8 length entry width,
//!                     u8 body codec, then varints: part count, record count,
//!                     body bytes stored, body bytes decoded
//! part table          part_count entries (1, 2 or 4 bytes): the record each part draws
//! record lengths      record_count entries (2 or 4 bytes): each record's bytes
//!                     inside the body
//! body                the records back to back, each in the compact form
//!                     (`compact_record`: a varint header, then the streams of a
//!                     cooked version 2 record), raw or one zstd frame
//! ```
//!
//! Parts that cook to the same bytes (a glTF mesh used by several nodes, repeated
//! primitives, identical geometry after quantisation) name the same record; a decoder
//! decodes each record once and a renderer uploads it once. The writer picks the
//! smallest of: records with their own entropy layer, stored raw; records without it
//! in one zstd frame; records with it in one zstd frame. Entries are as narrow as
//! the largest value needs, so a set of small parts pays a few bytes of tables.
//! Version 1 (a 32-byte header, u32 tables, 144-byte record headers) is refused as
//! [`FormatError::WrongVersion`].
//!
//! Allocation: the body's decoded size is declared and bounded by [`MAX_EXPANSION`]
//! times its stored size before anything is allocated; the tables are in the record,
//! so their counts are bounded by its length.

use crate::cooked::{EXPANSION_SLACK, MAX_EXPANSION};
use crate::varint::Reader;
use crate::{CookedMesh, DecodeScratch, FormatError, MeshData, Section, Stream};

/// The set layout this reader knows (`CookedSetHeader::version`).
pub const SET_VERSION: u32 = 2;

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
    /// A [`SetCodec`] value.
    pub body_codec: u32,
    /// Body bytes stored in the record.
    pub body_stored_len: u32,
    /// Body bytes once the codec is undone (the sum of the record lengths).
    pub body_len: u32,
    /// Bytes per part table entry (1, 2 or 4).
    pub part_width: u8,
    /// Bytes per record length entry (2 or 4).
    pub length_width: u8,
}

/// A cooked mesh set, its header and tables validated; the records are checked as
/// they are decoded.
#[derive(Clone, Copy, Debug)]
pub struct CookedSet<'a> {
    pub header: CookedSetHeader,
    parts: &'a [u8],
    lens: &'a [u8],
    body: &'a [u8],
}

fn bad(field: &'static str, found: u64) -> FormatError {
    FormatError::BadField {
        section: Section::RecordHeader,
        field,
        found,
    }
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
    /// Checks the header, the part table and the record lengths; decodes nothing.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes, Section::RecordHeader);
        let version = r.byte()? as u32;
        if version != SET_VERSION {
            return Err(FormatError::WrongVersion {
                found: version,
                expected: SET_VERSION,
            });
        }
        let fixed = r.take(3)?;
        let (part_width, length_width, body_codec) = (fixed[0], fixed[1], fixed[2] as u32);
        if !matches!(part_width, 1 | 2 | 4) {
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
            body_codec,
            body_stored_len: r.varint("body_stored_len")?,
            body_len: r.varint("body_len")?,
            part_width,
            length_width,
        };
        if (h.part_count == 0) != (h.record_count == 0) {
            return Err(bad("record_count", h.record_count as u64));
        }
        if h.record_count > h.part_count {
            return Err(bad("record_count", h.record_count as u64));
        }
        let tables =
            part_width as u64 * h.part_count as u64 + length_width as u64 * h.record_count as u64;
        let needed = tables + h.body_stored_len as u64;
        let available = (bytes.len() - r.at) as u64;
        if needed > available {
            return Err(FormatError::LengthPastEnd {
                section: Section::Stream(Stream::SetBody),
                length: needed,
                available,
            });
        }
        if needed != available {
            return Err(bad("trailing bytes in record", available - needed));
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
        let parts = r.take(part_width as usize * h.part_count as usize)?;
        let lens = r.take(length_width as usize * h.record_count as usize)?;
        let body = r.rest();
        for p in 0..h.part_count as usize {
            let rec = entry(parts, part_width, p);
            if rec >= h.record_count {
                return Err(bad("part record", rec as u64));
            }
        }
        let mut sum = 0u64;
        for i in 0..h.record_count as usize {
            let len = entry(lens, length_width, i) as u64;
            if len < MIN_RECORD {
                return Err(bad("record length", len));
            }
            sum += len;
        }
        if sum != decoded {
            return Err(bad("body_len", decoded));
        }
        Ok(Self {
            header: h,
            parts,
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

    /// The record part `part` draws, or `None` past the table.
    pub fn part_record(&self, part: usize) -> Option<usize> {
        (part < self.part_count()).then(|| entry(self.parts, self.header.part_width, part) as usize)
    }

    /// The record each part draws, in part order.
    pub fn part_records(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.part_count()).map(|p| entry(self.parts, self.header.part_width, p) as usize)
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

    /// Record `r` of a body returned by [`Self::body`], parsed.
    pub fn record<'b>(&self, body: &'b [u8], r: usize) -> Result<CookedMesh<'b>, FormatError> {
        if r >= self.record_count() || body.len() != self.header.body_len as usize {
            return Err(bad("record", r as u64));
        }
        let at: usize = (0..r).map(|i| self.record_len(i)).sum();
        CookedMesh::parse_compact(&body[at..at + self.record_len(r)])
    }

    fn record_len(&self, r: usize) -> usize {
        entry(self.lens, self.header.length_width, r) as usize
    }

    /// Decodes every record once into `out` (one mesh per record, see
    /// [`Self::part_record`] for which part draws which), reusing the meshes `out`
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
        for (r, mesh) in out.iter_mut().enumerate() {
            let len = self.record_len(r);
            CookedMesh::parse_compact(&body[at..at + len])?.decode_into(mesh, scratch)?;
            at += len;
        }
        Ok(())
    }

    /// Decodes every record into new meshes, one per record.
    pub fn decode(&self) -> Result<Vec<MeshData>, FormatError> {
        let mut out = Vec::new();
        self.decode_into(&mut out, &mut DecodeScratch::default())?;
        Ok(out)
    }
}

/// Cooks the parts of one model into a set record (see the module docs): each part as
/// [`crate::cook_mesh`] would, parts that cook to the same bytes stored once, and the
/// body stored the smallest way. Parts are cooked on the rayon pool; the bytes do not
/// depend on the thread count.
#[cfg(feature = "encode")]
pub fn cook_mesh_set(
    parts: &[MeshData],
    opts: &crate::CookOptions,
) -> Result<Vec<u8>, FormatError> {
    use rayon::prelude::*;
    use std::collections::HashMap;

    let plain_opts = crate::CookOptions {
        entropy: false,
        ..*opts
    };
    // Identical inputs cook alike: cook each distinct input once.
    let mut first_of: Vec<usize> = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        let same = (0..i).find(|&j| first_of[j] == j && parts[j] == *p);
        first_of.push(same.unwrap_or(i));
    }
    let distinct: Vec<usize> = (0..parts.len()).filter(|&i| first_of[i] == i).collect();
    let plain_full: Vec<Vec<u8>> = distinct
        .par_iter()
        .map(|&i| crate::cook_mesh(&parts[i], &plain_opts))
        .collect::<Result<_, _>>()?;
    let plain: Vec<Vec<u8>> = plain_full
        .iter()
        .map(|f| compact(f))
        .collect::<Result<_, _>>()?;
    // Then parts whose records are the same bytes (alike after quantisation).
    let mut record_of_bytes: HashMap<&[u8], u32> = HashMap::new();
    let mut record_of_distinct = Vec::with_capacity(distinct.len());
    let mut records: Vec<usize> = Vec::new(); // index into `distinct`
    for (d, bytes) in plain.iter().enumerate() {
        let next = records.len() as u32;
        let r = *record_of_bytes.entry(bytes.as_slice()).or_insert(next);
        if r == next {
            records.push(d);
        }
        record_of_distinct.push(r);
    }
    let part_table: Vec<u32> = first_of
        .iter()
        .map(|&f| record_of_distinct[distinct.binary_search(&f).expect("a distinct part")])
        .collect();

    let zstd = |body: &[u8]| {
        zstd::bulk::compress(body, opts.zstd_level).map_err(|_| FormatError::BadInput {
            what: "zstd compression failed",
            found: body.len() as u64,
        })
    };
    let fits = |stored: usize, decoded: usize| {
        stored > 0 && decoded as u64 <= MAX_EXPANSION * stored as u64 + EXPANSION_SLACK
    };
    let join =
        |recs: &[&Vec<u8>]| -> Vec<u8> { recs.iter().flat_map(|r| r.iter().copied()).collect() };
    let plain_records: Vec<&Vec<u8>> = records.iter().map(|&d| &plain[d]).collect();
    // (codec, body, the records' lengths)
    let mut best = (SetCodec::Raw, join(&plain_records), lengths(&plain_records));
    if opts.entropy {
        let coded: Vec<Vec<u8>> = records
            .par_iter()
            .map(|&d| compact(&crate::cook_mesh(&parts[distinct[d]], opts)?))
            .collect::<Result<_, _>>()?;
        let coded: Vec<&Vec<u8>> = coded.iter().collect();
        let raw_body = join(&plain_records);
        let coded_body = join(&coded);
        let mut candidates = vec![(SetCodec::Raw, coded_body.clone(), lengths(&coded))];
        let z = zstd(&raw_body)?;
        if fits(z.len(), raw_body.len()) {
            candidates.push((SetCodec::Zstd, z, lengths(&plain_records)));
        }
        let z = zstd(&coded_body)?;
        if fits(z.len(), coded_body.len()) {
            candidates.push((SetCodec::Zstd, z, lengths(&coded)));
        }
        // The records without entropy layer, their vertex streams raw, in one frame.
        let raw_vertex: Vec<Vec<u8>> = records
            .par_iter()
            .map(
                |&d| match crate::cooked::raw_vertex_streams(&plain_full[d])? {
                    Some(raw) => compact(&raw),
                    None => Ok(plain[d].clone()),
                },
            )
            .collect::<Result<_, _>>()?;
        let raw_vertex: Vec<&Vec<u8>> = raw_vertex.iter().collect();
        let raw_vertex_body = join(&raw_vertex);
        let z = zstd(&raw_vertex_body)?;
        if fits(z.len(), raw_vertex_body.len()) {
            candidates.push((SetCodec::Zstd, z, lengths(&raw_vertex)));
        }
        // The first of the smallest: the order above breaks ties.
        for c in candidates {
            if c.1.len() < best.1.len() {
                best = c;
            }
        }
    }
    let (codec, body, lens) = best;
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
    let part_width: u8 = match lens.len() {
        0..=256 => 1,
        257..=65536 => 2,
        _ => 4,
    };
    let length_width: u8 = if lens.iter().all(|&l| l <= u16::MAX as u32) {
        2
    } else {
        4
    };
    let mut out = Vec::with_capacity(
        16 + part_width as usize * part_table.len()
            + length_width as usize * lens.len()
            + body.len(),
    );
    out.extend_from_slice(&[SET_VERSION as u8, part_width, length_width, codec as u8]);
    for v in [part_count, lens.len() as u32, body_stored_len, body_len] {
        crate::varint::put(&mut out, v);
    }
    for &p in &part_table {
        out.extend_from_slice(&p.to_le_bytes()[..part_width as usize]);
    }
    for &l in &lens {
        out.extend_from_slice(&l.to_le_bytes()[..length_width as usize]);
    }
    out.extend_from_slice(&body);
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
fn lengths(records: &[&Vec<u8>]) -> Vec<u32> {
    records.iter().map(|r| r.len() as u32).collect()
}
