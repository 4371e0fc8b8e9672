//! The head of a streamed file ([`Version::Streamed`]) read and verified alone: the
//! header, the manifest and the directory, from the file's first bytes, without its
//! records. Each record is then a byte range the caller reads when it wants it and
//! checks on its own ([`FileHead::verify_record`]).
//!
//! ```
//! use farsight_format::{FileHead, FileWriter, FormatError, Manifest, RecordIndex, RecordTag, Version};
//! # #[derive(serde::Serialize, serde::Deserialize)]
//! # struct One(RecordIndex);
//! # impl Manifest for One {
//! #     fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
//! #         visit(self.0, RecordTag(*b"DEMO"));
//! #     }
//! # }
//! let mut w = FileWriter::new(Version::Streamed);
//! let r = w.add_record(RecordTag(*b"DEMO"), &[7; 100]);
//! let file = w.finish(&One(r))?;
//! // The head alone: the file's first bytes, however many the head needs.
//! let head = FileHead::read(&file, file.len() as u64)?;
//! let head = FileHead::read(&file[..head.head_len()], file.len() as u64)?;
//! let range = head.record(r)?;
//! let bytes = &file[range.offset as usize..(range.offset + range.len) as usize];
//! head.verify_record(r, bytes)?;
//! # Ok::<(), FormatError>(())
//! ```

use crate::layout::{align_up, table_length_word_at, ENTRY_SIZE, MANIFEST_START, RECORD_ALIGN};
use crate::reader::{need, parse_manifest, read_u32, read_u64, verify_record_crc, zeros};
use crate::{FormatError, Manifest, RecordIndex, RecordTag, Section, Version, IDENTIFIER};

/// Where one record lies in a streamed file, and its checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRange {
    /// The record's index in the directory.
    pub index: RecordIndex,
    /// The record's kind.
    pub tag: RecordTag,
    /// Byte offset from the start of the file.
    pub offset: u64,
    /// The record's length in bytes.
    pub len: u64,
    /// CRC-32 of the record's bytes.
    pub crc: u32,
}

/// The verified head of a streamed file: version, manifest text and directory.
#[derive(Clone, Debug)]
pub struct FileHead {
    version: Version,
    manifest: String,
    records: Vec<RecordRange>,
    head_len: usize,
}

impl FileHead {
    /// A prefix this long holds the head of most files: read it first, and read
    /// again with the `needed` of a [`FormatError::Truncated`] if it does not.
    pub const MIN_PREFIX: usize = 64 << 10;

    /// Reads the head from `prefix`, the first bytes of a file of `file_len` bytes.
    /// Verifies the identifier, the version (only [`Version::Streamed`] files have
    /// a head checked on its own: others give `WrongVersion`), every length against
    /// `file_len`, the head checksum, the directory (records in order, aligned,
    /// inside the table) and that the manifest is UTF-8. A prefix shorter than the
    /// head gives `Truncated` with the bytes `needed` (at most `file_len`; past it
    /// the file itself is short). Allocates only the manifest text and the
    /// directory, both inside `prefix`.
    pub fn read(prefix: &[u8], file_len: u64) -> Result<Self, FormatError> {
        let id_len = prefix.len().min(12);
        if prefix[..id_len] != IDENTIFIER[..id_len] {
            let mut found = [0; 12];
            found[..id_len].copy_from_slice(&prefix[..id_len]);
            return Err(FormatError::WrongIdentifier { found });
        }
        need(Section::Identifier, prefix, 12)?;
        need(Section::Header, prefix, 16)?;
        let version = Version::from_word(read_u32(prefix, 12))?;
        if version != Version::Streamed {
            return Err(FormatError::WrongVersion {
                found: version as u32,
                expected: Version::Streamed as u32,
            });
        }
        need(Section::Header, prefix, 24)?;
        zeros(Section::Header, &prefix[20..24], 20)?;
        need(Section::ManifestLength, prefix, MANIFEST_START)?;
        let manifest_len = read_u64(prefix, 24);
        let past = |section, at: u64, length: u64| FormatError::LengthPastEnd {
            section,
            length,
            available: file_len.saturating_sub(at),
        };
        let rest = file_len.saturating_sub(MANIFEST_START as u64);
        if manifest_len > rest {
            return Err(past(Section::Manifest, MANIFEST_START as u64, manifest_len));
        }
        let manifest_end = MANIFEST_START + manifest_len as usize;
        let word_at = table_length_word_at(manifest_end);
        need(Section::TableLength, prefix, word_at + 8)?;
        zeros(
            Section::ManifestPadding,
            &prefix[manifest_end..word_at],
            manifest_end,
        )?;
        let table_len = read_u64(prefix, word_at);
        let table_start = word_at + 8;
        let rest = file_len.saturating_sub(table_start as u64);
        if table_len > rest {
            return Err(past(Section::Table, table_start as u64, table_len));
        }
        if table_len < rest {
            return Err(FormatError::TrailingBytes {
                count: rest - table_len,
            });
        }
        need(Section::Table, prefix, table_start + 8)?;
        let count = read_u32(prefix, table_start);
        zeros(Section::Table, &prefix[table_start + 4..table_start + 8], 4)?;
        let dir_end = 8 + ENTRY_SIZE as u64 * count as u64;
        if dir_end > table_len {
            return Err(FormatError::LengthPastEnd {
                section: Section::Directory,
                length: dir_end - 8,
                available: table_len.saturating_sub(8),
            });
        }
        let first_record = align_up(dir_end as usize, RECORD_ALIGN);
        let head_len = table_start + first_record;
        need(Section::Directory, prefix, head_len)?;
        let computed = crc32fast::hash(&prefix[20..head_len]);
        let stored = read_u32(prefix, 16);
        if stored != computed {
            return Err(FormatError::ChecksumMismatch { stored, computed });
        }
        let table = &prefix[table_start..head_len];
        zeros(Section::Table, &table[dir_end as usize..], dir_end as usize)?;
        let records = read_directory(table, count, table_start, table_len)?;
        let manifest = std::str::from_utf8(&prefix[MANIFEST_START..manifest_end])
            .map_err(|e| FormatError::ManifestNotUtf8 {
                valid_up_to: e.valid_up_to(),
            })?
            .to_owned();
        Ok(Self {
            version,
            manifest,
            records,
            head_len,
        })
    }

    /// The version word (always [`Version::Streamed`]).
    pub fn version(&self) -> Version {
        self.version
    }

    /// Bytes of the head: what [`FileHead::read`] needed of the file.
    pub fn head_len(&self) -> usize {
        self.head_len
    }

    /// The manifest text.
    pub fn manifest_text(&self) -> &str {
        &self.manifest
    }

    /// Every record's range, in table order.
    pub fn records(&self) -> &[RecordRange] {
        &self.records
    }

    /// The range of record `index`, or `IndexPastTable`.
    pub fn record(&self, index: RecordIndex) -> Result<RecordRange, FormatError> {
        self.records
            .get(index.0 as usize)
            .copied()
            .ok_or(FormatError::IndexPastTable {
                index: index.0,
                records: self.records.len() as u32,
            })
    }

    /// Checks the bytes read for record `index`: its length, then its checksum.
    pub fn verify_record(&self, index: RecordIndex, bytes: &[u8]) -> Result<(), FormatError> {
        self.record(index)?.verify(bytes)
    }

    /// Parses the manifest as `M` and checks every record it names exists with the
    /// kind it expects. [`Manifest::check`] needs the records and is not run: a
    /// streamer checks each record's fields as it arrives.
    pub fn parse<M: Manifest>(&self) -> Result<M, FormatError> {
        parse_manifest(&self.manifest, |i| self.record(i).map(|r| r.tag))
    }
}

/// The directory of a streamed file's head: `count` entries at the start of `table`
/// (the table from its start to the first record), each record starting at the
/// first 16-byte boundary after the one before and inside the table, and the last
/// one ending the table. Offsets come out relative to the file.
fn read_directory(
    table: &[u8],
    count: u32,
    table_start: usize,
    table_len: u64,
) -> Result<Vec<RecordRange>, FormatError> {
    let mut records = Vec::with_capacity(count as usize);
    let dir_end = 8 + ENTRY_SIZE as u64 * count as u64;
    let mut cursor = dir_end;
    for i in 0..count {
        let e = 8 + ENTRY_SIZE * i as usize;
        let offset = read_u64(table, e + 8);
        let len = read_u64(table, e + 16);
        let start = cursor.saturating_add(RECORD_ALIGN as u64 - 1) & !(RECORD_ALIGN as u64 - 1);
        if offset != start || offset > table_len || len > table_len - offset {
            return Err(FormatError::RecordOverrunsTable {
                index: i,
                offset,
                length: len,
                table_length: table_len,
            });
        }
        cursor = offset + len;
        records.push(RecordRange {
            index: RecordIndex(i),
            tag: RecordTag(table[e..e + 4].try_into().expect("4 bytes")),
            offset: table_start as u64 + offset,
            len,
            crc: read_u32(table, e + 4),
        });
    }
    let end = cursor.saturating_add(RECORD_ALIGN as u64 - 1) & !(RECORD_ALIGN as u64 - 1);
    if end != table_len {
        return Err(FormatError::RecordOverrunsTable {
            index: count,
            offset: cursor,
            length: 0,
            table_length: table_len,
        });
    }
    Ok(records)
}

impl RecordRange {
    /// Checks bytes read for this record: their length, then their CRC-32.
    pub fn verify(&self, bytes: &[u8]) -> Result<(), FormatError> {
        if bytes.len() as u64 != self.len {
            return Err(FormatError::LengthPastEnd {
                section: Section::Table,
                length: self.len,
                available: bytes.len() as u64,
            });
        }
        verify_record_crc(self.index, self.crc, bytes)
    }
}
