//! The reader: validates the whole layout once, then hands out records in place.
//!
//! Checks run cheapest first and in file order: identifier, version, each length
//! against what remains, trailing bytes, checksum, the directory (every entry inside
//! the table, in order, aligned, gaps zero), then the manifest text and every record
//! index it names. Nothing is allocated from a length the file states.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::layout::{align_up, table_length_word_at, ENTRY_SIZE, MANIFEST_START, RECORD_ALIGN};
use crate::{FormatError, RecordIndex, RecordTag, Section, Version, IDENTIFIER};

/// A manifest: the serde type of one asset kind. It reports every record it names so
/// the reader can check each index and kind before handing the file out.
pub trait Manifest: Serialize + DeserializeOwned {
    /// Calls `visit` once per record reference, with the kind that reference expects.
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag));

    /// Checks beyond record kinds, run by the reader once every reference resolved:
    /// the version this kind of file is written with, copies of record fields the
    /// manifest keeps. None by default.
    fn check(&self, _file: &RawFile<'_>) -> Result<(), FormatError> {
        Ok(())
    }
}

// The version word's parse sits here, not in `layout.rs`, so that the layout
// module stays a leaf (the error type names record tags).
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

/// How strictly to read. The default verifies everything.
#[derive(Clone, Copy, Debug)]
pub struct ReadConfig {
    /// Verify the CRC-32 over the file. Only fuzzers turn this off, to reach the
    /// structural checks behind it.
    pub verify_checksum: bool,
}

impl Default for ReadConfig {
    fn default() -> Self {
        Self {
            verify_checksum: true,
        }
    }
}

/// One record of the table, borrowed from the file bytes.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// The index the manifest uses for it.
    pub index: RecordIndex,
    /// Its kind.
    pub tag: RecordTag,
    /// Its bytes; they start 16-byte aligned when the file buffer does.
    pub bytes: &'a [u8],
}

/// A validated file whose manifest has not been parsed into a type: what a tool that
/// knows no asset kind (`farsight inspect`) reads.
#[derive(Clone, Copy, Debug)]
pub struct RawFile<'a> {
    version: Version,
    manifest: &'a str,
    table: &'a [u8],
    record_count: u32,
}

pub(crate) fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn read_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(crate) fn need(section: Section, bytes: &[u8], end: usize) -> Result<(), FormatError> {
    if bytes.len() < end {
        return Err(FormatError::Truncated {
            section,
            needed: end as u64,
            available: bytes.len() as u64,
        });
    }
    Ok(())
}

pub(crate) fn zeros(section: Section, bytes: &[u8], base: usize) -> Result<(), FormatError> {
    match bytes.iter().position(|&b| b != 0) {
        Some(i) => Err(FormatError::NonZeroPadding {
            section,
            offset: (base + i) as u64,
        }),
        None => Ok(()),
    }
}

impl<'a> RawFile<'a> {
    /// Validates `bytes` as a farsight file.
    pub fn read(bytes: &'a [u8]) -> Result<Self, FormatError> {
        Self::read_with(bytes, ReadConfig::default())
    }

    /// Validates `bytes` with the given options.
    pub fn read_with(bytes: &'a [u8], options: ReadConfig) -> Result<Self, FormatError> {
        let id_len = bytes.len().min(12);
        if bytes[..id_len] != IDENTIFIER[..id_len] {
            let mut found = [0; 12];
            found[..id_len].copy_from_slice(&bytes[..id_len]);
            return Err(FormatError::WrongIdentifier { found });
        }
        need(Section::Identifier, bytes, 12)?;
        need(Section::Header, bytes, 16)?;
        let version = Version::from_word(read_u32(bytes, 12))?;
        need(Section::Header, bytes, 24)?;
        zeros(Section::Header, &bytes[20..24], 20)?;
        need(Section::ManifestLength, bytes, MANIFEST_START)?;
        let manifest_len = read_u64(bytes, 24);
        let rest = (bytes.len() - MANIFEST_START) as u64;
        if manifest_len > rest {
            return Err(FormatError::LengthPastEnd {
                section: Section::Manifest,
                length: manifest_len,
                available: rest,
            });
        }
        let manifest_end = MANIFEST_START + manifest_len as usize;
        let word_at = table_length_word_at(manifest_end);
        need(Section::ManifestPadding, bytes, word_at)?;
        zeros(
            Section::ManifestPadding,
            &bytes[manifest_end..word_at],
            manifest_end,
        )?;
        need(Section::TableLength, bytes, word_at + 8)?;
        let table_len = read_u64(bytes, word_at);
        let table_start = word_at + 8;
        let rest = (bytes.len() - table_start) as u64;
        if table_len > rest {
            return Err(FormatError::LengthPastEnd {
                section: Section::Table,
                length: table_len,
                available: rest,
            });
        }
        if table_len < rest {
            return Err(FormatError::TrailingBytes {
                count: rest - table_len,
            });
        }
        let streamed = version == Version::Streamed;
        if options.verify_checksum && !streamed {
            check_crc(read_u32(bytes, 16), &bytes[20..])?;
        }
        let table = &bytes[table_start..];
        if streamed && options.verify_checksum {
            // The head first (its checksum covers the directory the records are
            // found by), then each record against its directory entry.
            need(Section::Table, table, 8)?;
            let count = read_u32(table, 0) as u64;
            let head_end = (table_start as u64)
                .saturating_add(align_up_u64(8 + ENTRY_SIZE as u64 * count))
                .min(bytes.len() as u64) as usize;
            check_crc(read_u32(bytes, 16), &bytes[20..head_end])?;
        }
        let record_count = validate_table(table, streamed, options.verify_checksum)?;
        let manifest = std::str::from_utf8(&bytes[MANIFEST_START..manifest_end]).map_err(|e| {
            FormatError::ManifestNotUtf8 {
                valid_up_to: e.valid_up_to(),
            }
        })?;
        Ok(Self {
            version,
            manifest,
            table,
            record_count,
        })
    }

    /// The version word.
    pub fn version(&self) -> Version {
        self.version
    }

    /// `WrongVersion` unless the version word is `expected`: what a kind of file's
    /// [`Manifest::check`] calls, since the checksum does not cover the version word
    /// and a swapped one would otherwise hand its records to the wrong decoder.
    pub fn require_version(&self, expected: Version) -> Result<(), FormatError> {
        if self.version != expected {
            return Err(FormatError::WrongVersion {
                found: self.version as u32,
                expected: expected as u32,
            });
        }
        Ok(())
    }

    /// The manifest text (indented RON).
    pub fn manifest_text(&self) -> &'a str {
        self.manifest
    }

    /// Number of records in the table.
    pub fn record_count(&self) -> u32 {
        self.record_count
    }

    /// Size of the table in bytes.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    /// The record at `index`, or `IndexPastTable`.
    pub fn record(&self, index: RecordIndex) -> Result<Record<'a>, FormatError> {
        if index.0 >= self.record_count {
            return Err(FormatError::IndexPastTable {
                index: index.0,
                records: self.record_count,
            });
        }
        let e = 8 + ENTRY_SIZE * index.0 as usize;
        let tag = RecordTag(self.table[e..e + 4].try_into().expect("4 bytes"));
        // validate_table checked these fit in usize and inside the table.
        let offset = read_u64(self.table, e + 8) as usize;
        let len = read_u64(self.table, e + 16) as usize;
        Ok(Record {
            index,
            tag,
            bytes: &self.table[offset..offset + len],
        })
    }

    /// Every record in table order.
    pub fn records(&self) -> impl Iterator<Item = Record<'a>> + '_ {
        (0..self.record_count).map(|i| self.record(RecordIndex(i)).expect("index in range"))
    }

    /// Parses the manifest as `M` and checks every record it names.
    pub fn parse<M: Manifest>(&self) -> Result<M, FormatError> {
        let manifest: M = parse_manifest(self.manifest, |i| self.record(i).map(|r| r.tag))?;
        manifest.check(self)?;
        Ok(manifest)
    }
}

/// Parses manifest text as `M` and checks every record it names exists (`tag_of`
/// gives a record's kind, or the error for an index past the table) with the kind
/// it expects.
pub(crate) fn parse_manifest<M: Manifest>(
    text: &str,
    tag_of: impl Fn(RecordIndex) -> Result<RecordTag, FormatError>,
) -> Result<M, FormatError> {
    let manifest: M = ron::de::from_str(text).map_err(|e| FormatError::Manifest {
        line: e.position.line,
        column: e.position.col,
        message: e.code.to_string(),
    })?;
    let mut bad = None;
    manifest.visit_records(&mut |index, tag| {
        if bad.is_some() {
            return;
        }
        match tag_of(index) {
            Err(e) => bad = Some(e),
            Ok(found) if found != tag => {
                bad = Some(FormatError::WrongRecordTag {
                    index: index.0,
                    expected: tag,
                    found,
                })
            }
            Ok(_) => {}
        }
    });
    match bad {
        Some(e) => Err(e),
        None => Ok(manifest),
    }
}

fn check_crc(stored: u32, bytes: &[u8]) -> Result<(), FormatError> {
    let computed = crc32fast::hash(bytes);
    if stored != computed {
        return Err(FormatError::ChecksumMismatch { stored, computed });
    }
    Ok(())
}

fn align_up_u64(x: u64) -> u64 {
    x.saturating_add(RECORD_ALIGN as u64 - 1) & !(RECORD_ALIGN as u64 - 1)
}

/// Checks the directory and the record layout; returns the record count. In a
/// streamed file (`record_crcs`) each entry's reserved word is its record's CRC-32,
/// checked when `verify` is set.
fn validate_table(table: &[u8], record_crcs: bool, verify: bool) -> Result<u32, FormatError> {
    need(Section::Table, table, 8)?;
    let count = read_u32(table, 0);
    zeros(Section::Table, &table[4..8], 4)?;
    let dir_end = 8u64 + ENTRY_SIZE as u64 * count as u64;
    if dir_end > table.len() as u64 {
        return Err(FormatError::LengthPastEnd {
            section: Section::Directory,
            length: dir_end - 8,
            available: table.len() as u64 - 8,
        });
    }
    let dir_end = dir_end as usize;
    let table_length = table.len() as u64;
    let mut cursor = dir_end; // end of the previous record or of the directory
    for i in 0..count as usize {
        let e = 8 + ENTRY_SIZE * i;
        if !record_crcs {
            zeros(Section::Directory, &table[e + 4..e + 8], e + 4)?;
        }
        let offset = read_u64(table, e + 8);
        let length = read_u64(table, e + 16);
        let bad = FormatError::RecordOverrunsTable {
            index: i as u32,
            offset,
            length,
            table_length,
        };
        let start = align_up(cursor, RECORD_ALIGN) as u64;
        if offset != start || offset > table_length || length > table_length - offset {
            return Err(bad);
        }
        zeros(Section::Table, &table[cursor..start as usize], cursor)?;
        cursor = (offset + length) as usize;
        if record_crcs && verify {
            verify_record_crc(
                RecordIndex(i as u32),
                read_u32(table, e + 4),
                &table[offset as usize..cursor],
            )?;
        }
    }
    let end = align_up(cursor, RECORD_ALIGN);
    if end as u64 != table_length {
        // The table length word and the directory disagree on where the table ends.
        return Err(FormatError::RecordOverrunsTable {
            index: count,
            offset: cursor as u64,
            length: 0,
            table_length,
        });
    }
    zeros(Section::Table, &table[cursor..end], cursor)?;
    Ok(count)
}

/// Checks one record of a streamed file against the CRC-32 its directory entry
/// holds ([`crate::FileHead::verify_record`] gives both).
pub fn verify_record_crc(index: RecordIndex, stored: u32, bytes: &[u8]) -> Result<(), FormatError> {
    let computed = crc32fast::hash(bytes);
    if stored != computed {
        return Err(FormatError::RecordChecksumMismatch {
            index: index.0,
            stored,
            computed,
        });
    }
    Ok(())
}

/// A validated file with its manifest parsed as `M`.
#[derive(Debug)]
pub struct Container<'a, M> {
    raw: RawFile<'a>,
    manifest: M,
}

impl<'a, M: Manifest> Container<'a, M> {
    /// Validates `bytes`, parses the manifest and checks every record it names.
    pub fn read(bytes: &'a [u8]) -> Result<Self, FormatError> {
        Self::read_with(bytes, ReadConfig::default())
    }

    /// As [`Container::read`] with options.
    pub fn read_with(bytes: &'a [u8], options: ReadConfig) -> Result<Self, FormatError> {
        let raw = RawFile::read_with(bytes, options)?;
        let manifest = raw.parse()?;
        Ok(Self { raw, manifest })
    }

    /// The version word: the loader chooses the mesh decoder by it.
    pub fn version(&self) -> Version {
        self.raw.version()
    }

    /// The parsed manifest.
    pub fn manifest(&self) -> &M {
        &self.manifest
    }

    /// Takes the manifest out.
    pub fn into_manifest(self) -> M {
        self.manifest
    }

    /// The record at `index`.
    pub fn record(&self, index: RecordIndex) -> Result<Record<'a>, FormatError> {
        self.raw.record(index)
    }

    /// The untyped view.
    pub fn raw(&self) -> &RawFile<'a> {
        &self.raw
    }
}
