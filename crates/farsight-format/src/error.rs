//! The one error type of every reader and writer in this crate.

use std::fmt;

use crate::RecordTag;

/// The part of a file an error was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Section {
    /// The twelve identifying bytes.
    Identifier,
    /// The fixed header after the identifier: version, checksum, reserved word.
    Header,
    /// The manifest length word.
    ManifestLength,
    /// The manifest text.
    Manifest,
    /// Zero padding between the manifest and the table length word.
    ManifestPadding,
    /// The table length word.
    TableLength,
    /// The record table (count, directory and records).
    Table,
    /// The directory of records at the start of the table.
    Directory,
    /// A record's own header.
    RecordHeader,
    /// One of a record's streams or arrays.
    Stream(Stream),
}

/// A named array or coded stream inside a mesh record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stream {
    /// Vertex positions.
    Positions,
    /// Vertex normals.
    Normals,
    /// Vertex tangents.
    Tangents,
    /// Texture coordinates.
    Uvs,
    /// Triangle indices.
    Indices,
    /// Per-triangle provenance (which source face a triangle came from).
    Provenance,
    /// Per-cluster records of a cluster level.
    Clusters,
    /// The fixed-size vertex array of a cluster level.
    ClusterVertices,
    /// The records of a cooked mesh set, as stored.
    SetBody,
}

/// Everything that can go wrong reading (or, for a few variants, writing) a farsight
/// file. Each variant says what was found, so a tool can print it and a test can match
/// it. File bytes never panic: every malformed input maps to one of these.
#[derive(Debug)]
#[non_exhaustive]
pub enum FormatError {
    /// The file or a part of it ends before a fixed-size field does.
    Truncated {
        /// Where the field is.
        section: Section,
        /// Bytes the field needs from the section's start.
        needed: u64,
        /// Bytes there are.
        available: u64,
    },
    /// The first twelve bytes are not [`crate::IDENTIFIER`].
    WrongIdentifier {
        /// The twelve bytes found.
        found: [u8; 12],
    },
    /// The version word is none this reader knows.
    UnknownVersion {
        /// The version word.
        found: u32,
    },
    /// A length word claims more bytes than the file holds after it.
    LengthPastEnd {
        /// Whose length it is.
        section: Section,
        /// The length claimed.
        length: u64,
        /// Bytes the file holds after the word.
        available: u64,
    },
    /// The file goes on after the table ends.
    TrailingBytes {
        /// Bytes after the table's end.
        count: u64,
    },
    /// The CRC-32 stored in the header does not match the bytes after it.
    ChecksumMismatch {
        /// The CRC-32 in the header.
        stored: u32,
        /// The CRC-32 of the bytes.
        computed: u32,
    },
    /// A reserved word or padding byte that must be zero is not.
    NonZeroPadding {
        /// Where the byte is.
        section: Section,
        /// Its offset in the file (or in the record, for a record's own fields).
        offset: u64,
    },
    /// The manifest is not UTF-8.
    ManifestNotUtf8 {
        /// Bytes of the manifest that are valid UTF-8.
        valid_up_to: usize,
    },
    /// The manifest does not parse as the expected RON type.
    Manifest {
        /// The line of the manifest text where parsing stopped (from 1).
        line: usize,
        /// The column there (from 1).
        column: usize,
        /// ron's message.
        message: String,
    },
    /// The manifest could not be written as RON (a writer-side error).
    ManifestWrite {
        /// ron's message.
        message: String,
    },
    /// The manifest names a record the table does not have.
    IndexPastTable {
        /// The record index named.
        index: u32,
        /// Records in the table.
        records: u32,
    },
    /// The manifest names a record of one kind where another was expected.
    WrongRecordTag {
        /// The record index named.
        index: u32,
        /// The kind the manifest expects there.
        expected: RecordTag,
        /// The kind the directory gives it.
        found: RecordTag,
    },
    /// A directory entry places its record outside the table, out of order, over
    /// another record, or off the 16-byte grid.
    RecordOverrunsTable {
        /// The record's index.
        index: u32,
        /// Its offset from the table's start.
        offset: u64,
        /// Its length.
        length: u64,
        /// The table's length.
        table_length: u64,
    },
    /// A record's bytes are not aligned in memory for reading in place (the caller's
    /// buffer is not 16-byte aligned; use [`crate::AlignedBytes`]).
    Misaligned {
        /// Which bytes.
        what: &'static str,
    },
    /// A record header field has a value no writer produces.
    BadField {
        /// Where the field is.
        section: Section,
        /// The field's name.
        field: &'static str,
        /// Its value.
        found: u64,
    },
    /// A stream's declared decoded size exceeds what its stored bytes could expand to.
    ExpansionTooLarge {
        /// The stream.
        stream: Stream,
        /// Its declared decoded bytes.
        decoded: u64,
        /// Its stored bytes.
        stored: u64,
        /// The most it may decode to ([`crate::MAX_EXPANSION`] per stored byte plus
        /// [`crate::EXPANSION_SLACK`]).
        limit: u64,
    },
    /// A coded stream failed to decode (entropy or meshopt layer), or decoded to a
    /// size other than the declared one.
    StreamDecode {
        /// The stream.
        stream: Stream,
        /// The layer that failed.
        codec: &'static str,
    },
    /// A triangle names a vertex the record does not have.
    VertexIndexOutOfRange {
        /// The index's position in the index buffer.
        position: u64,
        /// The index.
        index: u32,
        /// Vertices in the record.
        vertex_count: u32,
    },
    /// A float that must be finite is not (writer side: NaN or infinite input).
    NonFinite {
        /// Which value.
        what: &'static str,
    },
    /// The input handed to a writer is inconsistent (lengths disagree, not triangles).
    BadInput {
        /// What is wrong.
        what: &'static str,
        /// The number that is wrong (0 where there is none).
        found: u64,
    },
    /// The version word is one this reader knows, but not the one this kind of file
    /// is written with (the checksum does not cover the version word).
    WrongVersion {
        /// The file's version word.
        found: u32,
        /// The one this kind of file has.
        expected: u32,
    },
    /// A manifest's copy of a record's field (a level's counts, size or error)
    /// disagrees with the record itself.
    ManifestDisagrees {
        /// The level whose entry disagrees.
        level: u32,
        /// The field.
        field: &'static str,
        /// The manifest's value.
        manifest: f64,
        /// The record's value.
        record: f64,
    },
    /// A record of a streamed file ([`crate::Version::Streamed`]) does not hash to
    /// the CRC-32 in its directory entry.
    RecordChecksumMismatch {
        /// The record's index.
        index: u32,
        /// The CRC-32 in its directory entry.
        stored: u32,
        /// The CRC-32 of its bytes.
        computed: u32,
    },
    /// A material of a manifest's material table has a value no writer produces
    /// (out of range, not finite, a texture the table lacks, a repeated name).
    BadMaterial {
        /// The material's index in the table.
        material: u32,
        /// The field.
        field: &'static str,
        /// Its value, as text.
        found: String,
    },
    /// A texture of a manifest's material table is damaged: a file name that is
    /// not a hash name of its format, or embedded bytes of another format.
    BadTexture {
        /// The texture's index in the table.
        texture: u32,
        /// The field.
        field: &'static str,
        /// Its value, as text.
        found: String,
    },
    /// An I/O error reading or writing a file.
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FormatError as E;
        match self {
            E::Truncated { section, needed, available } => write!(
                f,
                "file truncated in {section:?}: needed {needed} bytes, {available} available"
            ),
            E::WrongIdentifier { found } => {
                write!(f, "not a farsight file: identifier is {found:02x?}")
            }
            E::UnknownVersion { found } => {
                write!(f, "unknown version {found} (this reader knows 1 to 3)")
            }
            E::LengthPastEnd { section, length, available } => write!(
                f,
                "{section:?} length {length} runs past the end ({available} bytes left)"
            ),
            E::TrailingBytes { count } => write!(f, "{count} trailing bytes after the table"),
            E::ChecksumMismatch { stored, computed } => write!(
                f,
                "checksum mismatch: header says {stored:08x}, bytes give {computed:08x}"
            ),
            E::NonZeroPadding { section, offset } => {
                write!(f, "non-zero reserved byte in {section:?} at offset {offset}")
            }
            E::ManifestNotUtf8 { valid_up_to } => {
                write!(f, "manifest is not UTF-8 (valid up to byte {valid_up_to})")
            }
            E::Manifest { line, column, message } => {
                write!(f, "manifest {line}:{column}: {message}")
            }
            E::ManifestWrite { message } => write!(f, "manifest could not be written: {message}"),
            E::IndexPastTable { index, records } => {
                write!(f, "manifest names record {index} but the table has {records}")
            }
            E::WrongRecordTag { index, expected, found } => {
                write!(f, "record {index} is {found}, expected {expected}")
            }
            E::RecordOverrunsTable { index, offset, length, table_length } => write!(
                f,
                "record {index} at {offset}+{length} does not fit the table ({table_length} bytes) in order and aligned"
            ),
            E::Misaligned { what } => write!(
                f,
                "{what} is not aligned in memory; read the file into AlignedBytes"
            ),
            E::BadField { section, field, found } => {
                write!(f, "{section:?}: field {field} has invalid value {found}")
            }
            E::ExpansionTooLarge { stream, decoded, stored, limit } => write!(
                f,
                "{stream:?} claims {decoded} decoded bytes from {stored} stored (limit {limit})"
            ),
            E::StreamDecode { stream, codec } => write!(f, "{stream:?}: {codec} decode failed"),
            E::VertexIndexOutOfRange { position, index, vertex_count } => write!(
                f,
                "index {position} names vertex {index} of {vertex_count}"
            ),
            E::NonFinite { what } => write!(f, "{what} is not finite"),
            E::BadInput { what, found } => write!(f, "bad input: {what} ({found})"),
            E::RecordChecksumMismatch { index, stored, computed } => write!(
                f,
                "record {index} checksum mismatch: stored {stored:08x}, computed {computed:08x}"
            ),
            E::WrongVersion { found, expected } => write!(
                f,
                "version {found} where this kind of file is always version {expected}"
            ),
            E::ManifestDisagrees { level, field, manifest, record } => write!(
                f,
                "manifest says level {level} has {field} {manifest}, its record says {record}"
            ),
            E::BadMaterial { material, field, found } => {
                write!(f, "material {material}: {field} is {found}")
            }
            E::BadTexture { texture, field, found } => {
                write!(f, "texture {texture}: {field} is {found}")
            }
            E::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for FormatError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FormatError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
