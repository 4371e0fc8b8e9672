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

use crate::layout::{align_up, table_length_word_at, ENTRY_SIZE, MANIFEST_START, RECORD_ALIGN};
use crate::reader::Manifest;
use crate::{FormatError, RecordIndex, RecordTag, Version, IDENTIFIER};

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
    /// records of a large file are filled in parallel (the first touch of its pages,
    /// most of its cost, spreads over the cores); a small one's in order on the
    /// calling thread. The bytes do not depend on the thread count; on an error
    /// (the first in record order) no file is returned.
    pub fn finish_filled<M, E, F>(self, manifest: &M, fill: F) -> Result<Vec<u8>, E>
    where
        M: Manifest,
        E: From<FormatError> + Send,
        F: Fn(RecordIndex, &mut [u8]) -> Result<(), E> + Sync,
    {
        self.check_manifest(manifest).map_err(E::from)?;
        self.layout(
            manifest,
            &fill,
            None::<&fn(RecordIndex, &mut Vec<u8>) -> Result<(), E>>,
        )
    }

    /// [`FileWriter::finish_filled`], where a file written in order on the calling
    /// thread (a small one, or one thread) has each reserved record appended to
    /// it by `append(index, file)` instead: exactly the record's reserved length,
    /// the same bytes `fill` writes. No byte of the file is then written twice
    /// (`fill` needs the file zeroed first, since it is handed initialised
    /// bytes). A record appended at another length is an error.
    pub fn finish_appended<M, E, F, A>(self, manifest: &M, fill: F, append: A) -> Result<Vec<u8>, E>
    where
        M: Manifest,
        E: From<FormatError> + Send,
        F: Fn(RecordIndex, &mut [u8]) -> Result<(), E> + Sync,
        A: Fn(RecordIndex, &mut Vec<u8>) -> Result<(), E>,
    {
        self.check_manifest(manifest).map_err(E::from)?;
        self.layout(manifest, &fill, Some(&append))
    }

    /// Every record the manifest names exists with the kind it expects.
    fn check_manifest<M: Manifest>(&self, manifest: &M) -> Result<(), FormatError> {
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
        bad.map_or(Ok(()), Err)
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
    fn layout<M, E, F, A>(&self, manifest: &M, fill: &F, append: Option<&A>) -> Result<Vec<u8>, E>
    where
        M: Manifest,
        E: From<FormatError> + Send,
        F: Fn(RecordIndex, &mut [u8]) -> Result<(), E> + Sync,
        A: Fn(RecordIndex, &mut Vec<u8>) -> Result<(), E>,
    {
        let dir_end = 8 + ENTRY_SIZE * self.records.len();
        let first_record = align_up(dir_end, RECORD_ALIGN);
        let table_len = self
            .records
            .iter()
            .fold(first_record, |at, r| align_up(at + r.len(), RECORD_ALIGN));

        // The manifest's text first, after the header's place (so its length is
        // known), then the file taken zeroed from the allocator (fresh pages come
        // zeroed from the system: no zeroing pass; calloc often knows a block
        // fresh from the heap's top is zero too) and the text copied in.
        let text = manifest_text(manifest)?;
        let manifest_len = text.len();
        let length_word = table_length_word_at(MANIFEST_START + manifest_len);
        let table_start = length_word + 8;
        debug_assert_eq!(table_start % RECORD_ALIGN, 0);
        let head_len = table_start + first_record;
        let file_len = table_start + table_len;
        #[cfg(feature = "encode")]
        let parallel = table_len > SMALL_TABLE && rayon::current_num_threads() > 1;
        #[cfg(not(feature = "encode"))]
        let parallel = false;
        // Written in order with `append` when the file is small: the head
        // zeroed alone, each record appended after its gap's zeros (no byte
        // written twice). A larger file's zeroed buffer usually comes from
        // fresh pages, zero already, where appending costs more than filling.
        let appending = append.filter(|_| !parallel && table_len <= APPEND_TABLE);
        let mut out = if appending.is_some() {
            let mut out = Vec::with_capacity(file_len);
            out.resize(head_len, 0);
            out
        } else {
            vec![0u8; file_len]
        };
        out[MANIFEST_START..MANIFEST_START + manifest_len].copy_from_slice(&text);
        drop(text);

        // The head is written in place (its gaps and reserved words are the zeros
        // already there), then each record's piece cut off the rest.
        let (head, rest) = out.split_at_mut(head_len);
        self.write_head(head, manifest_len, table_start, first_record, table_len);
        if let Some(append) = appending {
            self.append_records(&mut out, append, first_record, table_start, table_len)?;
        } else {
            self.fill_records(head, rest, fill, first_record, table_start, parallel)?;
        }

        self.write_checksum(&mut out, head_len, table_start, first_record, table_len);
        debug_assert_eq!(out.len(), table_start + table_len);
        debug_assert!(
            self.version == Version::Streamed
                || u32::from_le_bytes([out[16], out[17], out[18], out[19]])
                    == crc32fast::hash(&out[20..])
        );
        Ok(out)
    }

    /// The head's words in place (its gaps and reserved words are the zeros
    /// already there): identifier, version, manifest length, table length, record
    /// count and each record's directory entry (with its CRC while the file is
    /// written, a filled record's once it is filled; a version other than
    /// [`Version::Streamed`] zeroes them again in [`Self::write_checksum`]).
    fn write_head(
        &self,
        head: &mut [u8],
        manifest_len: usize,
        table_start: usize,
        first_record: usize,
        table_len: usize,
    ) {
        let mut put = |at: usize, bytes: &[u8]| head[at..at + bytes.len()].copy_from_slice(bytes);
        put(0, &IDENTIFIER);
        put(12, &(self.version as u32).to_le_bytes());
        // 16..24: checksum (written last) and reserved.
        put(24, &(manifest_len as u64).to_le_bytes());
        put(table_start - 8, &(table_len as u64).to_le_bytes());
        put(table_start, &(self.records.len() as u32).to_le_bytes());
        let mut offset = first_record;
        for (i, r) in self.records.iter().enumerate() {
            let entry = table_start + 8 + ENTRY_SIZE * i;
            put(entry, &r.tag.0);
            put(entry + 4, &r.crc.to_le_bytes());
            put(entry + 8, &(offset as u64).to_le_bytes());
            put(entry + 16, &(r.len() as u64).to_le_bytes());
            offset = align_up(offset + r.len(), RECORD_ALIGN);
        }
    }

    /// The records written into `rest` (the table past the head, zeroed): reserved
    /// records filled whole by `fill` (then hashed, each CRC put in its directory
    /// entry in `head`), stored records copied in chunks (so one large record also
    /// spreads over the cores). A small file, or one thread (not `parallel`), does
    /// it in order here (no list of tasks).
    fn fill_records<E, F>(
        &self,
        head: &mut [u8],
        rest: &mut [u8],
        fill: &F,
        first_record: usize,
        table_start: usize,
        parallel: bool,
    ) -> Result<(), E>
    where
        E: From<FormatError> + Send,
        F: Fn(RecordIndex, &mut [u8]) -> Result<(), E> + Sync,
    {
        let crc_at = |index: RecordIndex| crc_word_at(table_start, index);
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
        if parallel {
            #[cfg(feature = "encode")]
            {
                use rayon::prelude::*;
                let mut tasks: Vec<Task<'_>> = Vec::with_capacity(self.records.len());
                record_tasks(&self.records, first_record, rest, |task| {
                    tasks.push(task);
                    Ok::<(), E>(())
                })?;
                let filled: Vec<Option<(RecordIndex, u32)>> = tasks
                    .into_par_iter()
                    .with_max_len(1)
                    .map(run)
                    .collect::<Result<_, E>>()?;
                for (index, crc) in filled.into_iter().flatten() {
                    let at = crc_at(index);
                    head[at..at + 4].copy_from_slice(&crc.to_le_bytes());
                }
            }
            return Ok(());
        }
        record_tasks(&self.records, first_record, rest, |task| {
            if let Some((index, crc)) = run(task)? {
                let at = crc_at(index);
                head[at..at + 4].copy_from_slice(&crc.to_le_bytes());
            }
            Ok::<(), E>(())
        })
    }

    /// The records of a small file appended in order after the head (each after its
    /// gap's zeros, a reserved one by `append`), then the table's end padded and each
    /// appended record's CRC put in its directory entry.
    fn append_records<E, A>(
        &self,
        out: &mut Vec<u8>,
        append: &A,
        first_record: usize,
        table_start: usize,
        table_len: usize,
    ) -> Result<(), E>
    where
        E: From<FormatError>,
        A: Fn(RecordIndex, &mut Vec<u8>) -> Result<(), E>,
    {
        let crc_at = |index: RecordIndex| crc_word_at(table_start, index);
        let mut crcs = Vec::new();
        let mut end = first_record;
        for (i, r) in self.records.iter().enumerate() {
            let offset = align_up(end, RECORD_ALIGN);
            out.extend_from_slice(&[0; RECORD_ALIGN][..offset - end]);
            let at = out.len();
            if r.reserved.is_some() {
                let index = RecordIndex(i as u32);
                append(index, out)?;
                if out.len() != at + r.len() {
                    return Err(FormatError::BadInput {
                        what: "appended record is not its reserved length",
                        found: (out.len() - at) as u64,
                    }
                    .into());
                }
                crcs.push((index, crc32fast::hash(&out[at..])));
            } else {
                out.extend_from_slice(&r.bytes);
            }
            end = offset + r.len();
        }
        out.resize(table_start + table_len, 0);
        for (index, crc) in crcs {
            let at = crc_at(index);
            out[at..at + 4].copy_from_slice(&crc.to_le_bytes());
        }
        Ok(())
    }

    /// The header checksum: for [`Version::Streamed`] over the head alone (the
    /// records' CRCs in it); otherwise over every byte from offset 20, each record's
    /// CRC taken back out of its directory entry (where the writer left it) and
    /// combined, so no record is hashed twice, and the entry's word zeroed.
    fn write_checksum(
        &self,
        out: &mut [u8],
        head_len: usize,
        table_start: usize,
        first_record: usize,
        table_len: usize,
    ) {
        let crc_at = |index: RecordIndex| crc_word_at(table_start, index);
        if self.version == Version::Streamed {
            // The header checksum over the head alone (the records' CRCs in it).
            let crc = crc32fast::hash(&out[20..head_len]);
            out[16..20].copy_from_slice(&crc.to_le_bytes());
            return;
        }
        // Each record's CRC taken back out of its entry (the word is zero here).
        let mut crc = crc32fast::Hasher::new();
        let mut end = first_record;
        let mut record_crcs = crc32fast::Hasher::new();
        for (i, r) in self.records.iter().enumerate() {
            let at = crc_at(RecordIndex(i as u32));
            let word: [u8; 4] = out[at..at + 4].try_into().expect("four bytes");
            out[at..at + 4].fill(0);
            let offset = align_up(end, RECORD_ALIGN);
            record_crcs.update(&[0; RECORD_ALIGN][..offset - end]);
            record_crcs.combine(&crc32fast::Hasher::new_with_initial_len(
                u32::from_le_bytes(word),
                r.len() as u64,
            ));
            end = offset + r.len();
        }
        record_crcs.update(&[0; RECORD_ALIGN][..table_len - end]);
        crc.update(&out[20..head_len]);
        crc.combine(&record_crcs);
        out[16..20].copy_from_slice(&crc.finalize().to_le_bytes());
    }
}

/// The manifest's RON text: ron's pretty printer with its default configuration,
/// the text every farsight file has had (a hand-written printer of the same bytes
/// was 1-4 us faster per file; BENCHMARKS.md "Manifest text").
fn manifest_text<M: Manifest>(manifest: &M) -> Result<Vec<u8>, FormatError> {
    ron::ser::to_string_pretty(manifest, ron::ser::PrettyConfig::default())
        .map(String::into_bytes)
        .map_err(|e| FormatError::ManifestWrite {
            message: e.to_string(),
        })
}

/// Where record `index`'s CRC word (its directory entry's reserved word) lies in a
/// file whose table starts at `table_start`.
fn crc_word_at(table_start: usize, index: RecordIndex) -> usize {
    table_start + 8 + ENTRY_SIZE * index.0 as usize + 4
}

/// Hands `sink` each record's piece of `rest` (the table past the directory, from
/// `first_record` on) as a task, in record order: a reserved record's whole piece
/// to fill, a stored record's in chunks to copy.
fn record_tasks<'a, E>(
    records: &'a [Record],
    first_record: usize,
    mut rest: &'a mut [u8],
    mut sink: impl FnMut(Task<'a>) -> Result<(), E>,
) -> Result<(), E> {
    let mut end = first_record;
    for (i, r) in records.iter().enumerate() {
        let offset = align_up(end, RECORD_ALIGN);
        let (_, from) = std::mem::take(&mut rest).split_at_mut(offset - end);
        let (piece, after) = from.split_at_mut(r.len());
        if r.reserved.is_some() {
            sink(Task::Fill(RecordIndex(i as u32), piece))?;
        } else {
            for (to, from) in piece.chunks_mut(COPY_CHUNK).zip(r.bytes.chunks(COPY_CHUNK)) {
                sink(Task::Copy(from, to))?;
            }
        }
        rest = after;
        end = offset + r.len();
    }
    Ok(())
}

/// Tables up to this long make a small file ([`FileWriter::layout`]): its records
/// are filled in order on the calling thread (handing a record of a few dozen
/// kilobytes to another thread costs more than writing it).
#[cfg(feature = "encode")]
const SMALL_TABLE: usize = 1 << 18;

/// Tables up to this long are appended by [`FileWriter::finish_appended`]
/// (in instructions over the corpus cooks: 52K of Fox's 63K-byte file, 3K of
/// SimpleInstancing's 21K; past it the allocator handed cakeBirthday's 100K and
/// LightsPunctualLamp's 625K zeroed for free, and appending cost 0.05-0.1 %).
const APPEND_TABLE: usize = 1 << 16;

/// Bytes of a stored record copied by one task of [`FileWriter::layout`].
const COPY_CHUNK: usize = 1 << 18;

/// One piece of [`FileWriter::layout`]'s parallel write.
enum Task<'a> {
    /// A reserved record: filled by the caller, then hashed.
    Fill(RecordIndex, &'a mut [u8]),
    /// Part of a stored record.
    Copy(&'a [u8], &'a mut [u8]),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AlignedBytes, Container};
    use serde::{Deserialize, Serialize};

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
    fn appended_records_give_the_filled_files_bytes() {
        // Small files (appended) and one past the appending size (filled), both
        // versions, reserved records of every padding between stored ones.
        let fill_byte = |i: u32, j: usize| (j * 7 + i as usize * 3 + 1) as u8;
        for version in [Version::Streamed, Version::Cooked] {
            for lens in [&[0usize, 1, 16, 17, 4_001][..], &[33, APPEND_TABLE + 5]] {
                let make = || {
                    let mut writer = FileWriter::new(version);
                    let mut indices = vec![writer.add_record(RecordTag(*b"TEST"), &[9; 21])];
                    for &len in lens {
                        indices.push(writer.reserve_record(RecordTag(*b"TEST"), len));
                        indices.push(writer.add_record(RecordTag(*b"TEST"), &vec![5; len % 40]));
                    }
                    (writer, List(indices))
                };
                let fill = |index: RecordIndex, out: &mut [u8]| {
                    for (j, b) in out.iter_mut().enumerate() {
                        *b = fill_byte(index.0, j);
                    }
                    Ok::<(), FormatError>(())
                };
                let (writer, list) = make();
                let filled = writer.finish_filled(&list, fill).unwrap();
                let (writer, list) = make();
                let appended = writer
                    .finish_appended(&list, fill, |index, out: &mut Vec<u8>| {
                        let at = out.len();
                        assert_eq!(at % RECORD_ALIGN, 0);
                        let len = list
                            .0
                            .iter()
                            .position(|&i| i == index)
                            .map(|p| lens[(p - 1) / 2]);
                        out.extend((0..len.unwrap()).map(|j| fill_byte(index.0, j)));
                        Ok::<(), FormatError>(())
                    })
                    .unwrap();
                assert_eq!(appended, filled, "{version:?} {lens:?}");
            }
        }
        // A record appended at another length gives no file.
        let mut writer = FileWriter::new(Version::Streamed);
        let a = writer.reserve_record(RecordTag(*b"TEST"), 40);
        let err = writer
            .finish_appended(
                &List(vec![a]),
                |_, _| Ok::<(), FormatError>(()),
                |_, out: &mut Vec<u8>| {
                    out.extend_from_slice(&[1; 39]);
                    Ok(())
                },
            )
            .unwrap_err();
        assert!(matches!(err, FormatError::BadInput { found: 39, .. }));
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
