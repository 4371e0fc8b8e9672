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
        section: Section,
        needed: u64,
        available: u64,
    },
    /// The first twelve bytes are not [`crate::IDENTIFIER`].
    WrongIdentifier { found: [u8; 12] },
    /// The version word is none this reader knows.
    UnknownVersion { found: u32 },
    /// A length word claims more bytes than the file holds after it.
    LengthPastEnd {
        section: Section,
        length: u64,
        available: u64,
    },
    /// The file goes on after the table ends.
    TrailingBytes { count: u64 },
    /// The CRC-32 stored in the header does not match the bytes after it.
    ChecksumMismatch { stored: u32, computed: u32 },
    /// A reserved word or padding byte that must be zero is not.
    NonZeroPadding { section: Section, offset: u64 },
    /// The manifest is not UTF-8.
    ManifestNotUtf8 { valid_up_to: usize },
    /// The manifest does not parse as the expected RON type.
    Manifest {
        line: usize,
        column: usize,
        message: String,
    },
    /// The manifest could not be written as RON (a writer-side error).
    ManifestWrite { message: String },
    /// The manifest names a record the table does not have.
    IndexPastTable { index: u32, records: u32 },
    /// The manifest names a record of one kind where another was expected.
    WrongRecordTag {
        index: u32,
        expected: RecordTag,
        found: RecordTag,
    },
    /// A directory entry places its record outside the table, out of order, over
    /// another record, or off the 16-byte grid.
    RecordOverrunsTable {
        index: u32,
        offset: u64,
        length: u64,
        table_length: u64,
    },
    /// A record's bytes are not aligned in memory for reading in place (the caller's
    /// buffer is not 16-byte aligned; use [`crate::AlignedBytes`]).
    Misaligned { what: &'static str },
    /// A record header field has a value no writer produces.
    BadField {
        section: Section,
        field: &'static str,
        found: u64,
    },
    /// A stream's declared decoded size exceeds what its stored bytes could expand to.
    ExpansionTooLarge {
        stream: Stream,
        decoded: u64,
        stored: u64,
        limit: u64,
    },
    /// A coded stream failed to decode (entropy or meshopt layer), or decoded to a
    /// size other than the declared one.
    StreamDecode { stream: Stream, codec: &'static str },
    /// A triangle names a vertex the record does not have.
    VertexIndexOutOfRange {
        position: u64,
        index: u32,
        vertex_count: u32,
    },
    /// A float that must be finite is not (writer side: NaN or infinite input).
    NonFinite { what: &'static str },
    /// The input handed to a writer is inconsistent (lengths disagree, not triangles).
    BadInput { what: &'static str, found: u64 },
    /// The version word is one this reader knows, but not the one this kind of file
    /// is written with (the checksum does not cover the version word).
    WrongVersion { found: u32, expected: u32 },
    /// A manifest's copy of a record's field (a level's counts, size or error)
    /// disagrees with the record itself.
    ManifestDisagrees {
        level: u32,
        field: &'static str,
        manifest: f64,
        record: f64,
    },
    /// A record of a streamed file ([`crate::Version::Streamed`]) does not hash to
    /// the CRC-32 in its directory entry.
    RecordChecksumMismatch {
        index: u32,
        stored: u32,
        computed: u32,
    },
    /// A material of a manifest's material table has a value no writer produces
    /// (out of range, not finite, a texture the table lacks, a repeated name).
    BadMaterial {
        material: u32,
        field: &'static str,
        found: String,
    },
    /// A texture of a manifest's material table is damaged: a file name that is
    /// not a hash name of its format, or embedded bytes of another format.
    BadTexture {
        texture: u32,
        field: &'static str,
        found: String,
    },
    /// An I/O error reading or writing a file.
    Io {
        path: std::path::PathBuf,
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
