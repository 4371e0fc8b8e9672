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
use std::hash::{Hash, Hasher};

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
    records: Vec<(RecordTag, Vec<u8>)>,
    by_hash: HashMap<u64, Vec<u32>>,
}

impl FileWriter {
    /// An empty file of the given version.
    pub fn new(version: Version) -> Self {
        Self {
            version,
            records: Vec::new(),
            by_hash: HashMap::new(),
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
        // DefaultHasher::new() has fixed keys, so indices are deterministic.
        let mut h = std::hash::DefaultHasher::new();
        tag.hash(&mut h);
        bytes.hash(&mut h);
        let key = h.finish();
        let bucket = self.by_hash.entry(key).or_default();
        for &i in bucket.iter() {
            let (t, b) = &self.records[i as usize];
            if *t == tag && b.as_slice() == bytes {
                return RecordIndex(i);
            }
        }
        let index = u32::try_from(self.records.len()).expect("more than u32::MAX records");
        bucket.push(index);
        self.records.push((tag, bytes.to_vec()));
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
                Some((found, _)) if *found != tag => {
                    bad = Some(FormatError::WrongRecordTag {
                        index: index.0,
                        expected: tag,
                        found: *found,
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

    fn layout(&self, manifest: &[u8]) -> Vec<u8> {
        let dir_end = 8 + ENTRY_SIZE * self.records.len();
        let mut offsets = Vec::with_capacity(self.records.len());
        let mut at = align_up(dir_end, RECORD_ALIGN);
        for (_, bytes) in &self.records {
            offsets.push(at);
            at = align_up(at + bytes.len(), RECORD_ALIGN);
        }
        let table_len = at;

        let mut out = Vec::with_capacity(MANIFEST_START + manifest.len() + 32 + table_len);
        out.extend_from_slice(&IDENTIFIER);
        out.extend_from_slice(&(self.version as u32).to_le_bytes());
        out.extend_from_slice(&[0; 8]); // checksum, reserved
        out.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
        out.extend_from_slice(manifest);
        out.resize(table_length_word_at(out.len()), 0);
        out.extend_from_slice(&(table_len as u64).to_le_bytes());
        let table_start = out.len();
        debug_assert_eq!(table_start % RECORD_ALIGN, 0);
        out.extend_from_slice(&(self.records.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for ((tag, bytes), &offset) in self.records.iter().zip(&offsets) {
            out.extend_from_slice(&tag.0);
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(&(offset as u64).to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        }
        for ((_, bytes), &offset) in self.records.iter().zip(&offsets) {
            out.resize(table_start + offset, 0);
            out.extend_from_slice(bytes);
        }
        out.resize(table_start + table_len, 0);
        let crc = crc32fast::hash(&out[20..]);
        out[16..20].copy_from_slice(&crc.to_le_bytes());
        out
    }
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
