//! The container layout and its writer.
//!
//! ```text
//! offset  size  field
//!      0    12  IDENTIFIER  «FSIGHT»\r\n\x1A\n
//!     12     4  version     u32 (1 full precision, 2 cooked, 3 streamed)
//!     16     4  checksum    CRC-32 of every byte from offset 20 to the end
//!                           (version 3: to the first record, see below)
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
//!
//! Version 3 ([`Version::Streamed`]) is the layout a streamer reads one record at a
//! time: the header checksum covers only the head (offset 20 to the first record:
//! manifest, table length, directory and its padding), and each directory entry's
//! reserved word holds the CRC-32 of its record. So the head is read and verified
//! alone ([`crate::FileHead`]), then each record as a byte range on its own
//! ([`crate::FileHead::verify_record`]); reading the whole file still checks every
//! byte (head checksum, every record's checksum, every gap zero).

use std::collections::HashMap;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{FormatError, NO_PARENT_ERROR};

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
    /// Cooked records in the streaming layout: a checksum for the head alone and one
    /// per record in its directory entry, so each record is read and verified on its
    /// own (cluster-LOD files, whose levels stream one by one).
    Streamed = 3,
}

impl Version {
    /// The version for a version word, or `UnknownVersion`.
    pub fn from_word(word: u32) -> Result<Self, FormatError> {
        match word {
            1 => Ok(Version::Full),
            2 => Ok(Version::Cooked),
            3 => Ok(Version::Streamed),
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

/// A manifest: the serde type of one asset kind. It reports every record it names so
/// the reader can check each index and kind before handing the file out.
pub trait Manifest: Serialize + DeserializeOwned {
    /// Calls `visit` once per record reference, with the kind that reference expects.
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag));

    /// Checks beyond record kinds, run by the reader once every reference resolved:
    /// the version this kind of file is written with, copies of record fields the
    /// manifest keeps. None by default.
    fn check(&self, _file: &crate::RawFile<'_>) -> Result<(), FormatError> {
        Ok(())
    }
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
    /// The bytes, empty for a reserved record.
    bytes: Vec<u8>,
    /// CRC-32 of `bytes`.
    crc: u32,
    /// `Some(length)`: reserved by [`FileWriter::reserve_record`], written in place
    /// by [`FileWriter::finish_filled`].
    reserved: Option<usize>,
}

impl Record {
    fn len(&self) -> usize {
        self.reserved.unwrap_or(self.bytes.len())
    }
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
                r.reserved.is_none() && r.tag == tag && r.bytes == bytes
            })
            .map(|&i| RecordIndex(i))
    }

    fn push(&mut self, tag: RecordTag, bytes: Vec<u8>, crc: u32) -> RecordIndex {
        let index = self.next_index();
        self.by_crc
            .entry((crc, bytes.len()))
            .or_default()
            .push(index.0);
        self.records.push(Record {
            tag,
            bytes,
            crc,
            reserved: None,
        });
        index
    }

    fn next_index(&self) -> RecordIndex {
        RecordIndex(u32::try_from(self.records.len()).expect("more than u32::MAX records"))
    }

    /// Reserves a record of `len` bytes that [`FileWriter::finish_filled`] writes in
    /// place, straight into the file (no copy of the record, no second buffer of
    /// its size). A reserved record is never deduplicated.
    pub fn reserve_record(&mut self, tag: RecordTag, len: usize) -> RecordIndex {
        let index = self.next_index();
        self.records.push(Record {
            tag,
            bytes: Vec::new(),
            crc: 0,
            reserved: Some(len),
        });
        index
    }

    /// Writes the file: checks every record the manifest names exists with the kind
    /// it expects, then lays out the bytes. A file with reserved records is finished
    /// with [`FileWriter::finish_filled`]; here they are an error.
    pub fn finish<M: Manifest>(self, manifest: &M) -> Result<Vec<u8>, FormatError> {
        self.finish_filled(manifest, |_, _| {
            Err(FormatError::BadInput {
                what: "reserved record finished without a filler",
                found: 0,
            })
        })
    }

    /// [`FileWriter::finish`], writing every reserved record in place:
    /// `fill(index, bytes)` gets the record's bytes (its reserved length, zeroed,
    /// 16-byte aligned in memory) and writes them. With the `encode` feature the
    /// records are filled in parallel (the first touch of a large file's pages, most
    /// of its cost, spreads over the cores). The bytes do not depend on the thread
    /// count; on an error (the first in record order) no file is returned.
    pub fn finish_filled<M, E, F>(self, manifest: &M, fill: F) -> Result<Vec<u8>, E>
    where
        M: Manifest,
        E: From<FormatError> + Send,
        F: Fn(RecordIndex, &mut [u8]) -> Result<(), E> + Sync,
    {
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
            return Err(e.into());
        }
        let text = manifest_text(manifest)?;
        self.layout(text.as_bytes(), &fill)
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

    /// Lays the file out: whole 16-byte blocks (so every record is 16-byte aligned in
    /// memory too), the head (header, manifest, directory) first, then each record
    /// padded to 16. The checksum is not a pass over the bytes: the head is hashed as
    /// it stands and each record's CRC (from [`FileWriter::add_record`], or computed
    /// right after a reserved record is filled, while it is in cache) and padding are
    /// combined in, which gives the CRC-32 of the whole range.
    fn layout<E, F>(&self, manifest: &[u8], fill: &F) -> Result<Vec<u8>, E>
    where
        E: From<FormatError> + Send,
        F: Fn(RecordIndex, &mut [u8]) -> Result<(), E> + Sync,
    {
        let dir_end = 8 + ENTRY_SIZE * self.records.len();
        let mut offsets = Vec::with_capacity(self.records.len());
        let mut at = align_up(dir_end, RECORD_ALIGN);
        for r in &self.records {
            offsets.push(at);
            at = align_up(at + r.len(), RECORD_ALIGN);
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
            head.extend_from_slice(&(r.len() as u64).to_le_bytes());
        }
        head.resize(table_start + first_record, 0);

        // Zeroed blocks (fresh pages come zeroed from the system: no zeroing pass),
        // cut into the head and one piece per record.
        let blocks = (table_start + table_len) / RECORD_ALIGN;
        let mut out: Vec<Block> = vec![[0; RECORD_ALIGN]; blocks];
        let (head_out, mut rest) = out.as_flattened_mut().split_at_mut(head.len());
        head_out.copy_from_slice(&head);
        // The work: reserved records filled whole (then hashed), stored records
        // copied in chunks (so one large record also spreads over the cores).
        let mut tasks: Vec<Task<'_>> = Vec::with_capacity(self.records.len());
        let mut end = first_record;
        for (i, (r, &offset)) in self.records.iter().zip(&offsets).enumerate() {
            let (_, from) = std::mem::take(&mut rest).split_at_mut(offset - end);
            let (piece, after) = from.split_at_mut(r.len());
            if r.reserved.is_some() {
                tasks.push(Task::Fill(RecordIndex(i as u32), piece));
            } else {
                for (to, from) in piece.chunks_mut(COPY_CHUNK).zip(r.bytes.chunks(COPY_CHUNK)) {
                    tasks.push(Task::Copy(from, to));
                }
            }
            rest = after;
            end = offset + r.len();
        }
        let run = |task: Task<'_>| -> Result<Option<(RecordIndex, u32)>, E> {
            match task {
                Task::Fill(index, piece) => {
                    fill(index, piece)?;
                    Ok(Some((index, crc32fast::hash(piece))))
                }
                Task::Copy(from, to) => {
                    to.copy_from_slice(from);
                    Ok(None)
                }
            }
        };
        // One task (a file of one small record) runs here: nothing to spread.
        #[cfg(feature = "encode")]
        let filled: Vec<Option<(RecordIndex, u32)>> = if tasks.len() > 1 {
            use rayon::prelude::*;
            tasks
                .into_par_iter()
                .with_max_len(1)
                .map(run)
                .collect::<Result<_, E>>()?
        } else {
            tasks.into_iter().map(run).collect::<Result<_, E>>()?
        };
        #[cfg(not(feature = "encode"))]
        let filled: Vec<Option<(RecordIndex, u32)>> =
            tasks.into_iter().map(run).collect::<Result<_, E>>()?;
        let mut crcs: Vec<u32> = self.records.iter().map(|r| r.crc).collect();
        for (index, crc) in filled.into_iter().flatten() {
            crcs[index.0 as usize] = crc;
        }

        let mut out = out.into_flattened();
        if self.version == Version::Streamed {
            // Each record's CRC in its directory entry's reserved word; the header
            // checksum over the head alone.
            for (i, &record_crc) in crcs.iter().enumerate() {
                let at = table_start + 8 + ENTRY_SIZE * i + 4;
                out[at..at + 4].copy_from_slice(&record_crc.to_le_bytes());
            }
            let crc = crc32fast::hash(&out[20..head.len()]);
            out[16..20].copy_from_slice(&crc.to_le_bytes());
            return Ok(out);
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head[20..]);
        let mut end = first_record;
        for ((r, &offset), &record_crc) in self.records.iter().zip(&offsets).zip(&crcs) {
            crc.update(&[0; RECORD_ALIGN][..offset - end]);
            crc.combine(&crc32fast::Hasher::new_with_initial_len(
                record_crc,
                r.len() as u64,
            ));
            end = offset + r.len();
        }
        crc.update(&[0; RECORD_ALIGN][..table_len - end]);
        out[16..20].copy_from_slice(&crc.finalize().to_le_bytes());
        debug_assert_eq!(out.len(), table_start + table_len);
        debug_assert_eq!(
            u32::from_le_bytes([out[16], out[17], out[18], out[19]]),
            crc32fast::hash(&out[20..])
        );
        Ok(out)
    }
}

/// The manifest as indented RON: exactly the text of `ron::ser::to_string_pretty`
/// with `PrettyConfig::default()` (so files and readers are unchanged), written by
/// [`PrettyWriter`] without ron's per-value configuration checks, identifier
/// validation through Unicode tables and `fmt` calls for every integer (at 12
/// triangles ron's writer took 25k instructions, more than half of a cluster file's
/// encoding). What that writer does not cover goes to ron itself, which then
/// writes it or reports the error as before.
fn manifest_text<M: Serialize>(manifest: &M) -> Result<String, FormatError> {
    if let Some(text) = pretty_text(manifest) {
        return Ok(text);
    }
    ron::ser::to_string_pretty(manifest, ron::ser::PrettyConfig::default()).map_err(|e| {
        FormatError::ManifestWrite {
            message: e.to_string(),
        }
    })
}

/// [`PrettyWriter`]'s text, or `None` for a value it leaves to ron.
fn pretty_text<M: Serialize>(manifest: &M) -> Option<String> {
    let mut w = PrettyWriter {
        out: String::with_capacity(1024),
        indent: 0,
        is_empty: None,
        depth: 0,
    };
    manifest.serialize(&mut w).ok()?;
    Some(w.out)
}

/// ron 0.10's pretty serializer with the default configuration, state for state
/// (`indent` and `is_empty` are its `Pretty::indent` and `Serializer::is_empty`),
/// for the shapes manifests use. It refuses ([`LeftToRon`]) byte strings, 128-bit
/// integers, identifiers ron would write raw (`r#name`) or check against Unicode
/// tables (anything not ASCII), its raw values (their token is not an identifier)
/// and nesting deeper than [`MAX_DEPTH`] (ron refuses past 128).
struct PrettyWriter {
    out: String,
    indent: usize,
    /// Set when a sequence, map or struct opens (whether it has no members),
    /// cleared when one closes.
    is_empty: Option<bool>,
    depth: usize,
}

/// A value [`PrettyWriter`] does not write; ron does.
#[derive(Debug)]
struct LeftToRon;

impl fmt::Display for LeftToRon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to ron")
    }
}

impl std::error::Error for LeftToRon {}

impl serde::ser::Error for LeftToRon {
    fn custom<T: fmt::Display>(_: T) -> Self {
        LeftToRon
    }
}

const NEW_LINE: &str = if cfg!(target_os = "windows") {
    "\r\n"
} else {
    "\n"
};
const INDENTOR: &str = "    ";
/// ron's text of [`NO_PARENT_ERROR`] (`f32::MAX`).
const NO_PARENT_ERROR_TEXT: &str = "340282350000000000000000000000000000000.0";
/// Nesting [`PrettyWriter`] writes; deeper values go to ron (whose limit is 128).
const MAX_DEPTH: usize = 64;

type Written = Result<(), LeftToRon>;

impl PrettyWriter {
    fn start_indent(&mut self) {
        self.indent += 1;
        if !self.is_empty.unwrap_or(false) {
            self.out.push_str(NEW_LINE);
        }
    }

    fn write_indent(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str(INDENTOR);
        }
    }

    fn end_indent(&mut self) {
        if !self.is_empty.unwrap_or(false) {
            for _ in 1..self.indent {
                self.out.push_str(INDENTOR);
            }
        }
        self.indent -= 1;
        self.is_empty = None;
    }

    /// A member after the first: ron's `,` and new line.
    fn next_line(&mut self, first: &mut bool) {
        if !std::mem::take(first) {
            self.out.push(',');
            self.out.push_str(NEW_LINE);
        }
    }

    fn identifier(&mut self, name: &str) -> Written {
        check_identifier(name)?;
        self.out.push_str(name);
        Ok(())
    }

    fn nested<T: ?Sized + Serialize>(&mut self, value: &T) -> Written {
        if self.depth >= MAX_DEPTH {
            return Err(LeftToRon);
        }
        self.depth += 1;
        value.serialize(&mut *self)?;
        self.depth -= 1;
        Ok(())
    }

    /// An enum's variant: its name alone (ron checks the enum's).
    fn variant(&mut self, name: &str, variant: &str) -> Written {
        check_identifier(name)?;
        self.identifier(variant)
    }

    /// `open`, the value, `)`.
    fn wrapped<T: ?Sized + Serialize>(&mut self, open: &str, value: &T) -> Written {
        self.out.push_str(open);
        self.nested(value)?;
        self.out.push(')');
        Ok(())
    }

    /// Opens a compound with `bracket`: members on their own lines (`lined`: a
    /// sequence, map or struct of `len` members when known) or a tuple's.
    fn open(&mut self, bracket: char, len: Option<usize>, lined: bool) -> Members<'_> {
        self.out.push(bracket);
        if lined {
            if let Some(len) = len {
                self.is_empty = Some(len == 0);
            }
            self.start_indent();
        }
        Members {
            w: self,
            first: true,
            lined,
        }
    }

    fn uint(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for &d in &digits[at..] {
            self.out.push(char::from(d));
        }
    }

    fn sint(&mut self, v: i64) {
        if v < 0 {
            self.out.push('-');
        }
        self.uint(v.unsigned_abs());
    }

    /// ron's float `v` (an `f32` or `f64`, exact as `f64` but for a NaN's sign,
    /// given apart; `text` its own `Display`): `-` before a negative NaN, the
    /// shortest text that reads back,
    /// `.0` after an integral value. An integral value of magnitude below `2^24`
    /// is that text as an integer's digits: every integer there has a float of its
    /// own in either width, so no shorter text reads back to it (`-0` keeps its
    /// sign).
    fn float(&mut self, v: f64, negative_nan: bool, text: &dyn fmt::Display) -> Written {
        use std::fmt::Write as _;
        let integral = v.fract() == 0.0;
        if integral && v.abs() < 16_777_216.0 {
            if v.is_sign_negative() {
                self.out.push('-');
            }
            self.uint(v.abs() as u64);
        } else {
            if negative_nan {
                self.out.push('-');
            }
            write!(self.out, "{text}").map_err(|_| LeftToRon)?;
        }
        if integral {
            self.out.push_str(".0");
        }
        Ok(())
    }
}

/// Whether ron writes `name` as it stands: ASCII, a letter or `_` first, then
/// letters, digits and `_`, and none of ron's reserved words. Anything else is
/// left to ron (which writes `r#name` or refuses it).
fn check_identifier(name: &str) -> Written {
    let b = name.as_bytes();
    let plain = matches!(b.first(), Some(c) if c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && ![
            "true", "false", "Some", "None", "inf", "inff32", "inff64", "NaN", "NaNf32", "NaNf64",
        ]
        .contains(&name);
    if plain {
        Ok(())
    } else {
        Err(LeftToRon)
    }
}

/// One open sequence, tuple, map or struct of a [`PrettyWriter`].
struct Members<'a> {
    w: &'a mut PrettyWriter,
    first: bool,
    /// Members on their own lines (a sequence, map or struct), not a tuple's.
    lined: bool,
}

/// The serializer's integer methods, each widening to 64 bits for
/// [`PrettyWriter::sint`] or [`PrettyWriter::uint`].
macro_rules! integers {
    ($($name:ident($ty:ty) => $how:ident,)*) => {$(
        fn $name(self, v: $ty) -> Written {
            self.$how(v.into());
            Ok(())
        }
    )*};
}

impl<'a> serde::Serializer for &'a mut PrettyWriter {
    type Ok = ();
    type Error = LeftToRon;
    type SerializeSeq = Members<'a>;
    type SerializeTuple = Members<'a>;
    type SerializeTupleStruct = Members<'a>;
    type SerializeTupleVariant = Members<'a>;
    type SerializeMap = Members<'a>;
    type SerializeStruct = Members<'a>;
    type SerializeStructVariant = Members<'a>;

    fn serialize_bool(self, v: bool) -> Written {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    integers! {
        serialize_i8(i8) => sint,
        serialize_i16(i16) => sint,
        serialize_i32(i32) => sint,
        serialize_i64(i64) => sint,
        serialize_u8(u8) => uint,
        serialize_u16(u16) => uint,
        serialize_u32(u32) => uint,
        serialize_u64(u64) => uint,
    }
    fn serialize_f32(self, v: f32) -> Written {
        if v == NO_PARENT_ERROR {
            // Every cluster file's coarsest level has no parent.
            self.out.push_str(NO_PARENT_ERROR_TEXT);
            return Ok(());
        }
        self.float(v.into(), v.is_nan() && v.is_sign_negative(), &v)
    }
    fn serialize_f64(self, v: f64) -> Written {
        self.float(v, v.is_nan() && v.is_sign_negative(), &v)
    }
    fn serialize_char(self, v: char) -> Written {
        self.out.push('\'');
        if v == '\\' || v == '\'' {
            self.out.push('\\');
        }
        self.out.push(v);
        self.out.push('\'');
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Written {
        self.out.push('"');
        let plain = |b: &u8| (0x20..0x7f).contains(b) && !matches!(b, b'"' | b'\'' | b'\\');
        if v.as_bytes().iter().all(plain) {
            self.out.push_str(v);
        } else {
            // ron escapes char by char (`char::escape_debug`, both quotes).
            self.out.extend(v.chars().flat_map(char::escape_debug));
        }
        self.out.push('"');
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Written {
        Err(LeftToRon)
    }
    fn serialize_none(self) -> Written {
        self.out.push_str("None");
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Written {
        self.wrapped("Some(", value)
    }
    fn serialize_unit(self) -> Written {
        self.out.push_str("()");
        Ok(())
    }
    fn serialize_unit_struct(self, name: &'static str) -> Written {
        check_identifier(name)?;
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, name: &'static str, _: u32, variant: &'static str) -> Written {
        self.variant(name, variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Written {
        check_identifier(name)?;
        self.wrapped("(", value)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Written {
        self.variant(name, variant)?;
        self.wrapped("(", value)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Members<'a>, LeftToRon> {
        Ok(self.open('[', len, true))
    }
    fn serialize_tuple(self, _: usize) -> Result<Members<'a>, LeftToRon> {
        Ok(self.open('(', None, false))
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Members<'a>, LeftToRon> {
        check_identifier(name)?;
        self.serialize_tuple(len)
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Members<'a>, LeftToRon> {
        self.variant(name, variant)?;
        self.serialize_tuple(len)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Members<'a>, LeftToRon> {
        Ok(self.open('{', len, true))
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Members<'a>, LeftToRon> {
        check_identifier(name)?;
        Ok(self.open('(', Some(len), true))
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Members<'a>, LeftToRon> {
        self.variant(name, variant)?;
        Ok(self.open('(', Some(len), true))
    }
}

impl Members<'_> {
    /// A sequence's element or a map's key: on its own indented line.
    fn line<T: ?Sized + Serialize>(&mut self, value: &T) -> Written {
        self.w.next_line(&mut self.first);
        self.w.write_indent();
        self.w.nested(value)
    }

    /// A tuple's element: after `, ` on the same line.
    fn inline<T: ?Sized + Serialize>(&mut self, value: &T) -> Written {
        if !std::mem::take(&mut self.first) {
            self.w.out.push_str(", ");
        }
        self.w.nested(value)
    }

    fn field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Written {
        self.w.next_line(&mut self.first);
        self.w.write_indent();
        self.w.identifier(key)?;
        self.w.out.push_str(": ");
        self.w.nested(value)
    }

    /// Closes the compound: for a sequence, map or struct (members on their own
    /// lines) the last member's `,` and new line, then the closing bracket at the
    /// opening line's indent; a tuple's bracket follows its last member.
    fn close(mut self, bracket: char) -> Written {
        if self.lined {
            if !self.first {
                self.w.next_line(&mut self.first);
            }
            self.w.end_indent();
        }
        self.w.out.push(bracket);
        Ok(())
    }
}

/// The serde member traits but the map's, each adding through one [`Members`]
/// method and closing with its bracket.
macro_rules! members {
    ($($trait:ident: $add:ident($($key:ident)?) => $how:ident, $bracket:literal;)*) => {$(
        impl serde::ser::$trait for Members<'_> {
            type Ok = ();
            type Error = LeftToRon;
            fn $add<T: ?Sized + Serialize>(
                &mut self,
                $($key: &'static str,)?
                value: &T,
            ) -> Written {
                self.$how($($key,)? value)
            }
            fn end(self) -> Written {
                self.close($bracket)
            }
        }
    )*};
}

members! {
    SerializeSeq: serialize_element() => line, ']';
    SerializeTuple: serialize_element() => inline, ')';
    SerializeTupleStruct: serialize_field() => inline, ')';
    SerializeTupleVariant: serialize_field() => inline, ')';
    SerializeStruct: serialize_field(key) => field, ')';
    SerializeStructVariant: serialize_field(key) => field, ')';
}

impl serde::ser::SerializeMap for Members<'_> {
    type Ok = ();
    type Error = LeftToRon;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Written {
        self.line(key)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Written {
        self.w.out.push_str(": ");
        self.w.nested(value)
    }
    fn end(self) -> Written {
        self.close('}')
    }
}

type Block = [u8; RECORD_ALIGN];

/// Bytes of a stored record copied by one task of [`FileWriter::layout`].
const COPY_CHUNK: usize = 1 << 18;

/// One piece of [`FileWriter::layout`]'s parallel write.
enum Task<'a> {
    /// A reserved record: filled by the caller, then hashed.
    Fill(RecordIndex, &'a mut [u8]),
    /// Part of a stored record.
    Copy(&'a [u8], &'a mut [u8]),
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

    /// ron's own pretty text, the reference [`manifest_text`] must equal.
    fn ron_pretty<T: Serialize>(value: &T) -> String {
        ron::ser::to_string_pretty(value, ron::ser::PrettyConfig::default()).unwrap()
    }

    #[derive(Serialize)]
    struct UnitStruct;

    #[derive(Serialize)]
    struct Newtype(String);

    #[derive(Serialize)]
    struct Pair(i16, char);

    #[derive(Serialize)]
    struct NoFields {}

    #[derive(Serialize)]
    enum Shape {
        Unit,
        New(f32),
        Tuple(u8, i64),
        Struct { a: Option<u32>, b: Vec<()> },
        Empty {},
    }

    #[derive(Serialize)]
    struct Everything {
        flag: bool,
        small: i8,
        big: u64,
        neg: i64,
        floats: Vec<f32>,
        doubles: Vec<f64>,
        text: Vec<String>,
        chars: Vec<char>,
        none: Option<u8>,
        some: Option<Option<f32>>,
        unit: (),
        unit_struct: UnitStruct,
        newtype: Newtype,
        pair: Pair,
        no_fields: NoFields,
        shapes: Vec<Shape>,
        map: std::collections::BTreeMap<String, Vec<u16>>,
        empty_map: std::collections::BTreeMap<u8, u8>,
        nested: Vec<Vec<[f32; 3]>>,
        empty_vec: Vec<u32>,
        record: RecordIndex,
        tuple: (u8, (String, bool), Vec<i8>),
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        _underscore: Vec<Vec<u8>>,
    }

    #[test]
    fn the_manifest_writer_writes_rons_pretty_text_byte_for_byte() {
        let value = Everything {
            flag: true,
            small: i8::MIN,
            big: u64::MAX,
            neg: i64::MIN,
            floats: vec![
                0.0,
                -0.0,
                1.0,
                -2.5,
                0.1,
                1e-40,
                f32::MIN_POSITIVE,
                f32::MAX,
                f32::MIN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                -f32::NAN,
                16_777_216.0,
                16_777_215.0,
                -8_388_607.0,
                1e7,
                -3.0,
                65_536.0,
                3.402_823_5e38,
            ],
            doubles: vec![
                f64::MAX,
                1e300,
                -1e-300,
                f64::NAN,
                -0.0,
                16_777_215.0,
                16_777_216.0,
                9_007_199_254_740_993.0,
            ],
            text: [
                "plain",
                "",
                "quote\"s",
                "back\\slash",
                "apostrophe's",
                "tab\tnew\nline\r",
                "unicode é ✓ 🎉",
                "e\u{301} combining",
                "\u{7f}\u{0}\u{1b}",
                "{[(,:)]} #r\"x\"#",
            ]
            .map(String::from)
            .to_vec(),
            chars: vec!['a', '\'', '\\', '"', '\n', 'é', '\u{301}', '🎉'],
            none: None,
            some: Some(Some(f32::EPSILON)),
            unit: (),
            unit_struct: UnitStruct,
            newtype: Newtype("n".into()),
            pair: Pair(-7, 'x'),
            no_fields: NoFields {},
            shapes: vec![
                Shape::Unit,
                Shape::New(0.5),
                Shape::Tuple(9, -9),
                Shape::Struct {
                    a: Some(3),
                    b: vec![(), ()],
                },
                Shape::Struct { a: None, b: vec![] },
                Shape::Empty {},
            ],
            map: [("k".to_string(), vec![1, 2]), ("".to_string(), vec![])]
                .into_iter()
                .collect(),
            empty_map: Default::default(),
            nested: vec![vec![], vec![[1.0, 2.0, 3.0]], vec![[0.0; 3], [-1.5; 3]]],
            empty_vec: vec![],
            record: RecordIndex(42),
            tuple: (1, ("t".into(), false), vec![-1, 0, 1]),
            skipped: None,
            _underscore: vec![vec![0], vec![]],
        };
        let text = pretty_text(&value).expect("written without ron");
        assert_eq!(text, ron_pretty(&value));
        // Bit patterns across the whole range, both widths.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let floats: Vec<(f32, f64, u32, i64)> = (0..4000)
            .map(|_| {
                let r = next();
                (
                    f32::from_bits(r as u32),
                    f64::from_bits(r),
                    (r >> 40) as u32,
                    r as i64,
                )
            })
            .collect();
        assert_eq!(pretty_text(&floats).unwrap(), ron_pretty(&floats));
        // Integral values around the integer fast path's bound, both widths.
        let integral: Vec<(f32, f64)> = (-3000..3000)
            .map(|i: i32| i * 5591)
            .chain((16_777_200..16_777_230).flat_map(|i: i32| [i, -i]))
            .map(|i| (i as f32, i as f64))
            .collect();
        assert_eq!(pretty_text(&integral).unwrap(), ron_pretty(&integral));
        // A real manifest.
        let manifest = crate::ClusterMeshManifest {
            name: "mesh".into(),
            bounds_min: [-1.0, 0.0, 0.25],
            bounds_max: [1.0, 2.0, 3.5],
            materials: vec!["a".into(), "b".into()],
            instances: vec![[1.0; 16]],
            error_bounds: Some([0.0, 1.0, 2.0, 3.0]),
            ..Default::default()
        };
        assert_eq!(pretty_text(&manifest).unwrap(), ron_pretty(&manifest));
    }

    /// Serialises as a byte string.
    struct Bytes;

    impl Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(b"raw\x00")
        }
    }

    #[derive(Serialize)]
    struct Reserved {
        #[serde(rename = "inf")]
        inf: u8,
    }

    #[derive(Serialize)]
    struct NotAscii {
        #[serde(rename = "größe")]
        size: u8,
    }

    #[derive(Serialize)]
    struct Deep(Option<Box<Deep>>);

    #[test]
    fn what_the_manifest_writer_leaves_to_ron_is_written_by_ron() {
        // Two levels each (newtype, Some): 80 past the writer's 64, under ron's 128.
        let deep = (0..40).fold(Deep(None), |d, _| Deep(Some(Box::new(d))));
        let too_deep = (0..100).fold(Deep(None), |d, _| Deep(Some(Box::new(d))));
        assert!(pretty_text(&(Bytes, 1u8)).is_none());
        assert!(pretty_text(&Reserved { inf: 1 }).is_none());
        assert!(pretty_text(&NotAscii { size: 1 }).is_none());
        assert!(pretty_text(&deep).is_none());
        assert!(pretty_text(&1u128).is_none());
        assert_eq!(
            manifest_text(&(Bytes, 1u8)).unwrap(),
            ron_pretty(&(Bytes, 1u8))
        );
        assert_eq!(
            manifest_text(&Reserved { inf: 1 }).unwrap(),
            ron_pretty(&Reserved { inf: 1 })
        );
        assert_eq!(
            manifest_text(&NotAscii { size: 1 }).unwrap(),
            ron_pretty(&NotAscii { size: 1 })
        );
        assert_eq!(manifest_text(&deep).unwrap(), ron_pretty(&deep));
        // Past ron's recursion limit: ron's error, as before.
        assert!(matches!(
            manifest_text(&too_deep),
            Err(FormatError::ManifestWrite { .. })
        ));
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

    #[test]
    fn reserved_records_are_written_in_place_between_stored_ones() {
        // Reserved records of every padding, a stored record larger than a copy
        // chunk, and stored records with the same bytes as a reserved one (a
        // reserved record is never deduplicated).
        let fill_byte = |i: u32, j: usize| (j * 13 + i as usize * 5) as u8;
        let mut writer = FileWriter::new(Version::Cooked);
        let mut expected: Vec<(RecordIndex, Vec<u8>)> = Vec::new();
        let big: Vec<u8> = (0..COPY_CHUNK * 2 + 7).map(|j| (j % 251) as u8).collect();
        expected.push((writer.add_record(RecordTag(*b"TEST"), &big), big));
        for (k, len) in [0usize, 1, 16, 17, 100_003].into_iter().enumerate() {
            let index = writer.reserve_record(RecordTag(*b"TEST"), len);
            let bytes = (0..len).map(|j| fill_byte(index.0, j)).collect::<Vec<u8>>();
            if k == 2 {
                // The same bytes stored: a new record, not the reserved one.
                let stored = writer.add_record(RecordTag(*b"TEST"), &bytes);
                assert_ne!(stored, index);
                expected.push((stored, bytes.clone()));
            }
            expected.push((index, bytes));
        }
        let indices: Vec<RecordIndex> = expected.iter().map(|(i, _)| *i).collect();
        let bytes = writer
            .finish_filled(&List(indices), |index, out: &mut [u8]| {
                assert_eq!(out.as_ptr() as usize % RECORD_ALIGN, 0);
                assert!(out.iter().all(|&b| b == 0), "handed zeroed bytes");
                for (j, b) in out.iter_mut().enumerate() {
                    *b = fill_byte(index.0, j);
                }
                Ok::<(), FormatError>(())
            })
            .unwrap();
        let checksum = u32::from_le_bytes(bytes[16..20].try_into().unwrap());
        assert_eq!(checksum, crc32fast::hash(&bytes[20..]));
        let aligned = AlignedBytes::from(&bytes[..]);
        let file = Container::<List>::read(&aligned).unwrap();
        for (index, r) in &expected {
            assert_eq!(file.record(*index).unwrap().bytes, &r[..]);
        }
    }

    #[test]
    fn a_failing_fill_or_an_unfilled_reservation_gives_no_file() {
        let mut writer = FileWriter::new(Version::Cooked);
        let a = writer.reserve_record(RecordTag(*b"TEST"), 40);
        let b = writer.reserve_record(RecordTag(*b"TEST"), 40);
        let err = writer
            .finish_filled(&List(vec![a, b]), |index, _| {
                if index == b {
                    Err(FormatError::BadInput {
                        what: "test",
                        found: 7,
                    })
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
        assert!(matches!(err, FormatError::BadInput { found: 7, .. }));
        let mut writer = FileWriter::new(Version::Cooked);
        let a = writer.reserve_record(RecordTag(*b"TEST"), 40);
        assert!(matches!(
            writer.finish(&List(vec![a])),
            Err(FormatError::BadInput { .. })
        ));
    }
}
