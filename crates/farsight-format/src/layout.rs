//! The container's fixed layout: the identifier, version word, record tags and
//! indices, and the offsets and alignment every reader and writer shares (the table
//! of `container.rs`'s module docs). A leaf: it imports nothing from the crate
//! (`Version::from_word`, which returns the crate's error, lives with the reader).

use std::fmt;

use serde::{Deserialize, Serialize};

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
    /// Full precision: f32 attributes, u32 indices, provenance
    /// (`docs/design/baked-buildings.md#the-full-and-cooked-files`).
    Full = 1,
    /// Cooked: quantised, reordered and entropy-coded for a GPU
    /// (`docs/design/baked-buildings.md#the-full-and-cooked-files`).
    Cooked = 2,
    /// Cooked records in the streaming layout: a checksum for the head alone and one
    /// per record in its directory entry, so each record is read and verified on its
    /// own (cluster-LOD files, whose levels stream one by one).
    Streamed = 3,
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
    /// A cooked mesh set: a model's parts, identical ones stored once.
    pub const MESH_COOKED_SET: RecordTag = RecordTag(*b"MSS1");
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

/// Rounds `x` up to a multiple of `a` (a power of two).
pub(crate) fn align_up(x: usize, a: usize) -> usize {
    (x + a - 1) & !(a - 1)
}

/// Where the table length word goes after a manifest ending at `end`: the first
/// position at or after `end` that makes the table itself start 16-aligned.
pub(crate) fn table_length_word_at(end: usize) -> usize {
    align_up(end + 8, RECORD_ALIGN) - 8
}
