//! The container layout and its writer.
//!
//! ```text
//! offset  size  field
//!      0    12  IDENTIFIER  «FSIGHT»\r\n\x1A\n
//!     12     4  version     u32 (1 full precision, 2 cooked)
//!     16     4  checksum    CRC-32 of every byte from offset 20 to the end
//!     20     4  reserved    0
//!     24     8  manifest length M (u64)
//!     32     M  manifest    indented RON, UTF-8
//!      .     .  zero padding so that the table length word ends on a 16-byte boundary
//!      P     8  table length T (u64)
//!    P+8     T  table       (16-byte aligned)
//! ```
//!
//! The table: `record_count: u32`, `reserved: u32`, then `record_count` directory
//! entries of 24 bytes (`tag: [u8; 4]`, `reserved: u32`, `offset: u64`, `length: u64`,
//! offsets relative to the table start), zero padding to 16, then the records in
//! directory order, each starting on a 16-byte boundary, gaps zero, and the table ending
//! at the first 16-byte boundary after the last record. Every integer is little-endian.
//! Every byte is accounted for, so any change to a file is either caught by the
//! structural checks or by the checksum.

use std::collections::HashMap;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::FormatError;

/// The twelve identifying bytes every farsight file starts with, shaped as KTX2's:
/// one byte with the high bit set, six ASCII characters, the closing byte, CR LF,
/// Ctrl-Z, LF. A file mangled by a text-mode transfer fails here.
pub const IDENTIFIER: [u8; 12] = *b"\xABFSIGHT\xBB\r\n\x1A\n";

/// Byte offset of the manifest text.
pub(crate) const MANIFEST_START: usize = 32;
/// Alignment of the table and of every record in it.
pub const RECORD_ALIGN: usize = 16;
/// Size of one directory entry.
pub(crate) const ENTRY_SIZE: usize = 24;

/// The version word: which mesh encodings the file's records use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// Full precision: f32 attributes, u32 indices, provenance (seed 004 "The file").
    Full = 1,
    /// Cooked: quantised, reordered and entropy-coded for a GPU (seed 004 version 2).
    Cooked = 2,
}

impl Version {
    /// The version for a version word, or `UnknownVersion`.
    pub fn from_word(word: u32) -> Result<Self, FormatError> {
        match word {
            1 => Ok(Version::Full),
            2 => Ok(Version::Cooked),
            found => Err(FormatError::UnknownVersion { found }),
        }
    }
}

/// Four ASCII bytes naming a record's kind, stored in the directory so a tool can
/// describe a record without the manifest type.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordTag(pub [u8; 4]);

impl RecordTag {
    /// A full-precision mesh ([`crate::FullMesh`]).
    pub const MESH_FULL: RecordTag = RecordTag(*b"MSH1");
    /// A cooked mesh ([`crate::CookedMesh`]).
    pub const MESH_COOKED: RecordTag = RecordTag(*b"MSH2");
    /// One level of a cluster-LOD mesh ([`crate::ClusterLevel`]).
    pub const CLUSTER_LEVEL: RecordTag = RecordTag(*b"CLV1");
}

impl fmt::Display for RecordTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in &self.0 {
            if b.is_ascii_graphic() {
                write!(f, "{}", b as char)?;
            } else {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for RecordTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordTag({self})")
    }
}

/// Index of a record in the table. This is what a manifest stores where a mesh would
/// be; it serialises as a bare integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RecordIndex(pub u32);

/// A manifest: the serde type of one asset kind. It reports every record it names so
/// the reader can check each index and kind before handing the file out.
pub trait Manifest: Serialize + DeserializeOwned {
    /// Calls `visit` once per record reference, with the kind that reference expects.
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag));
}

/// Builds a file: add records (identical ones are stored once), then finish with the
/// manifest that names them.
///
/// ```
/// use farsight_format::{Container, FileWriter, Manifest, RecordIndex, RecordTag, Version};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Debug, PartialEq)]
/// struct Chain {
///     name: String,
///     levels: Vec<RecordIndex>,
/// }
/// impl Manifest for Chain {
///     fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
///         for &level in &self.levels {
///             visit(level, RecordTag(*b"DEMO"));
///         }
///     }
/// }
///
/// let mut writer = FileWriter::new(Version::Full);
/// let a = writer.add_record(RecordTag(*b"DEMO"), &[1, 2, 3]);
/// let b = writer.add_record(RecordTag(*b"DEMO"), &[1, 2, 3]); // stored once
/// assert_eq!(a, b);
/// let manifest = Chain { name: "rock".into(), levels: vec![a, b] };
/// let bytes = writer.finish(&manifest)?;
///
/// let aligned = farsight_format::AlignedBytes::from(&bytes[..]);
/// let file = Container::<Chain>::read(&aligned)?;
/// assert_eq!(file.manifest(), &manifest);
/// assert_eq!(file.record(file.manifest().levels[1])?.bytes, &[1, 2, 3]);
/// # Ok::<(), farsight_format::FormatError>(())
/// ```
#[derive(Debug)]
pub struct FileWriter {
    version: Version,
    records: Vec<Record>,
    /// Record indices by (CRC-32, length) of their bytes: the dedup lookup, and the
    /// CRC is reused for the file checksum (see [`FileWriter::layout`]).
    by_crc: HashMap<(u32, usize), Vec<u32>>,
}

#[derive(Debug)]
struct Record {
    tag: RecordTag,
    bytes: Vec<u8>,
    /// CRC-32 of `bytes`.
    crc: u32,
}

impl FileWriter {
    /// An empty file of the given version.
    pub fn new(version: Version) -> Self {
        Self {
            version,
            records: Vec::new(),
            by_crc: HashMap::new(),
        }
    }

    /// The version this writer stamps.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Number of distinct records so far.
    pub fn record_count(&self) -> usize {
        self.records.len()
    }

    /// Adds a record and returns its index; a record identical in tag and bytes to an
    /// earlier one returns the earlier index and stores nothing.
    pub fn add_record(&mut self, tag: RecordTag, bytes: &[u8]) -> RecordIndex {
        let crc = crc32fast::hash(bytes);
        self.find(tag, bytes, crc)
            .unwrap_or_else(|| self.push(tag, bytes.to_vec(), crc))
    }

    /// [`FileWriter::add_record`] for bytes the caller no longer needs: a new record
    /// keeps the vector instead of copying it.
    pub fn add_owned_record(&mut self, tag: RecordTag, bytes: Vec<u8>) -> RecordIndex {
        let crc = crc32fast::hash(&bytes);
        self.find(tag, &bytes, crc)
            .unwrap_or_else(|| self.push(tag, bytes, crc))
    }

    /// The index of a stored record equal to `(tag, bytes)`. The CRC only narrows
    /// the search; equality is decided on the bytes.
    fn find(&self, tag: RecordTag, bytes: &[u8], crc: u32) -> Option<RecordIndex> {
        let bucket = self.by_crc.get(&(crc, bytes.len()))?;
        bucket
            .iter()
            .find(|&&i| {
                let r = &self.records[i as usize];
                r.tag == tag && r.bytes == bytes
            })
            .map(|&i| RecordIndex(i))
    }

    fn push(&mut self, tag: RecordTag, bytes: Vec<u8>, crc: u32) -> RecordIndex {
        let index = u32::try_from(self.records.len()).expect("more than u32::MAX records");
        self.by_crc
            .entry((crc, bytes.len()))
            .or_default()
            .push(index);
        self.records.push(Record { tag, bytes, crc });
        RecordIndex(index)
    }

    /// Writes the file: checks every record the manifest names exists with the kind
    /// it expects, then lays out the bytes.
    pub fn finish<M: Manifest>(self, manifest: &M) -> Result<Vec<u8>, FormatError> {
        let mut bad = None;
        manifest.visit_records(&mut |index, tag| {
            if bad.is_some() {
                return;
            }
            match self.records.get(index.0 as usize) {
                None => {
                    bad = Some(FormatError::IndexPastTable {
                        index: index.0,
                        records: self.records.len() as u32,
                    })
                }
                Some(r) if r.tag != tag => {
                    bad = Some(FormatError::WrongRecordTag {
                        index: index.0,
                        expected: tag,
                        found: r.tag,
                    })
                }
                Some(_) => {}
            }
        });
        if let Some(e) = bad {
            return Err(e);
        }
        let text = ron::ser::to_string_pretty(manifest, ron::ser::PrettyConfig::default())
            .map_err(|e| FormatError::ManifestWrite {
                message: e.to_string(),
            })?;
        Ok(self.layout(text.as_bytes()))
    }

    /// Writes the file to `path` (see [`FileWriter::finish`]).
    pub fn write_to<M: Manifest>(
        self,
        manifest: &M,
        path: impl AsRef<std::path::Path>,
    ) -> Result<(), FormatError> {
        let bytes = self.finish(manifest)?;
        std::fs::write(path.as_ref(), bytes).map_err(|source| FormatError::Io {
            path: path.as_ref().to_path_buf(),
            source,
        })
    }

    /// Lays the file out (see [`assemble_blocks`]). The checksum is not a pass over
    /// the bytes: the header, manifest and directory are hashed as they stand and
    /// each record's CRC (from [`FileWriter::add_record`]) and padding are combined
    /// in, which gives the CRC-32 of the whole range.
    fn layout(&self, manifest: &[u8]) -> Vec<u8> {
        let dir_end = 8 + ENTRY_SIZE * self.records.len();
        let mut offsets = Vec::with_capacity(self.records.len());
        let mut at = align_up(dir_end, RECORD_ALIGN);
        for r in &self.records {
            offsets.push(at);
            at = align_up(at + r.bytes.len(), RECORD_ALIGN);
        }
        let table_len = at;
        let first_record = align_up(dir_end, RECORD_ALIGN);

        let mut head = Vec::with_capacity(MANIFEST_START + manifest.len() + 32 + first_record);
        head.extend_from_slice(&IDENTIFIER);
        head.extend_from_slice(&(self.version as u32).to_le_bytes());
        head.extend_from_slice(&[0; 8]); // checksum, reserved
        head.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
        head.extend_from_slice(manifest);
        head.resize(table_length_word_at(head.len()), 0);
        head.extend_from_slice(&(table_len as u64).to_le_bytes());
        let table_start = head.len();
        debug_assert_eq!(table_start % RECORD_ALIGN, 0);
        head.extend_from_slice(&(self.records.len() as u32).to_le_bytes());
        head.extend_from_slice(&[0; 4]);
        for (r, &offset) in self.records.iter().zip(&offsets) {
            head.extend_from_slice(&r.tag.0);
            head.extend_from_slice(&[0; 4]);
            head.extend_from_slice(&(offset as u64).to_le_bytes());
            head.extend_from_slice(&(r.bytes.len() as u64).to_le_bytes());
        }
        head.resize(table_start + first_record, 0);

        let mut crc = crc32fast::Hasher::new();
        crc.update(&head[20..]);
        let mut end = first_record;
        for (r, &offset) in self.records.iter().zip(&offsets) {
            crc.update(&[0; RECORD_ALIGN][..offset - end]);
            crc.combine(&crc32fast::Hasher::new_with_initial_len(
                r.crc,
                r.bytes.len() as u64,
            ));
            end = offset + r.bytes.len();
        }
        crc.update(&[0; RECORD_ALIGN][..table_len - end]);
        head[16..20].copy_from_slice(&crc.finalize().to_le_bytes());

        // The file is whole 16-byte blocks: the head, then each record padded to 16.
        let mut pieces: Vec<&[u8]> = Vec::with_capacity(self.records.len() + 1);
        pieces.push(&head);
        pieces.extend(self.records.iter().map(|r| r.bytes.as_slice()));
        let out = assemble_blocks(&pieces, (table_start + table_len) / RECORD_ALIGN);
        debug_assert_eq!(out.len(), table_start + table_len);
        debug_assert_eq!(
            u32::from_le_bytes([out[16], out[17], out[18], out[19]]),
            crc32fast::hash(&out[20..])
        );
        out
    }
}

type Block = [u8; RECORD_ALIGN];

/// Block `j` of a piece: its bytes `16 j ..`, zero past its end.
#[inline]
fn piece_block(piece: &[u8], j: usize) -> Block {
    let from = j * RECORD_ALIGN;
    if let Some(whole) = piece.get(from..from + RECORD_ALIGN) {
        // Every block but a piece's last: a fixed-size copy (no memcpy call).
        return whole.try_into().expect("16 bytes");
    }
    let mut b = [0u8; RECORD_ALIGN];
    let from = from.min(piece.len());
    let to = (from + RECORD_ALIGN).min(piece.len());
    b[..to - from].copy_from_slice(&piece[from..to]);
    b
}

/// The pieces one after another, each padded with zeros to whole 16-byte blocks
/// (`blocks` in all). With the `encode` feature rayon writes the blocks straight
/// into the new buffer: no zeroing pass, and the first touch of its pages (for a
/// file of megabytes most of the cost, several microseconds a page on a VM)
/// spreads over the cores.
fn assemble_blocks(pieces: &[&[u8]], blocks: usize) -> Vec<u8> {
    // First block of each piece.
    let mut starts = Vec::with_capacity(pieces.len());
    let mut at = 0;
    for p in pieces {
        starts.push(at);
        at += p.len().div_ceil(RECORD_ALIGN);
    }
    debug_assert_eq!(at, blocks);
    let block = |i: usize| -> Block {
        let p = starts.partition_point(|&s| s <= i) - 1;
        piece_block(pieces[p], i - starts[p])
    };
    #[cfg(feature = "encode")]
    let out: Vec<Block> = {
        use rayon::prelude::*;
        let mut v = Vec::new();
        (0..blocks)
            .into_par_iter()
            .with_min_len(1 << 14)
            .map(block)
            .collect_into_vec(&mut v);
        v
    };
    #[cfg(not(feature = "encode"))]
    let out: Vec<Block> = (0..blocks).map(block).collect();
    out.into_flattened()
}

/// Rounds `x` up to a multiple of `a` (a power of two).
pub(crate) fn align_up(x: usize, a: usize) -> usize {
    (x + a - 1) & !(a - 1)
}

/// Where the table length word goes after a manifest ending at `end`: the first
/// position at or after `end` that makes the table itself start 16-aligned.
pub(crate) fn table_length_word_at(end: usize) -> usize {
    align_up(end + 8, RECORD_ALIGN) - 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AlignedBytes, Container};

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct List(Vec<RecordIndex>);

    impl Manifest for List {
        fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
            for &r in &self.0 {
                visit(r, RecordTag(*b"TEST"));
            }
        }
    }

    #[test]
    fn records_of_every_padding_read_back_with_a_valid_checksum() {
        // Lengths around the 16-byte blocks, an empty record, one large enough to
        // span several parallel pieces, and duplicates (stored once).
        let lengths = [0usize, 1, 15, 16, 17, 33, 300_001, 5, 0, 16];
        let records: Vec<Vec<u8>> = lengths
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|j| (j * 31 + i * 7) as u8).collect())
            .collect();
        let mut writer = FileWriter::new(Version::Full);
        let mut indices = Vec::new();
        for (i, r) in records.iter().enumerate() {
            indices.push(if i % 2 == 0 {
                writer.add_record(RecordTag(*b"TEST"), r)
            } else {
                writer.add_owned_record(RecordTag(*b"TEST"), r.clone())
            });
        }
        // The second empty record is the first one again.
        assert_eq!(indices[8], indices[0]);
        assert_eq!(writer.record_count(), lengths.len() - 1);
        let bytes = writer.finish(&List(indices.clone())).unwrap();
        assert_eq!(bytes.len() % RECORD_ALIGN, 0);
        let checksum = u32::from_le_bytes(bytes[16..20].try_into().unwrap());
        assert_eq!(checksum, crc32fast::hash(&bytes[20..]));
        let aligned = AlignedBytes::from(&bytes[..]);
        let file = Container::<List>::read(&aligned).unwrap();
        for (r, &index) in records.iter().zip(&indices) {
            assert_eq!(file.record(index).unwrap().bytes, &r[..]);
        }
    }
}
