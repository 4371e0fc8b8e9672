//! The streamed layout (version 3): the head read and verified alone, each record
//! verified on its own, and the whole file still checked byte for byte.

use farsight_format::{
    AlignedBytes, Container, FileHead, FileWriter, FormatError, Manifest, RecordIndex, RecordTag,
    Version,
};
use serde::{Deserialize, Serialize};

const TAG: RecordTag = RecordTag(*b"TEST");

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Levels(Vec<RecordIndex>);

impl Manifest for Levels {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        for &r in &self.0 {
            visit(r, TAG);
        }
    }
}

fn sample() -> (Levels, Vec<u8>) {
    let mut w = FileWriter::new(Version::Streamed);
    let records: Vec<RecordIndex> = [100usize, 17, 0, 4096]
        .iter()
        .enumerate()
        .map(|(i, &n)| w.add_record(TAG, &(0..n).map(|j| (j * 7 + i) as u8).collect::<Vec<_>>()))
        .collect();
    let m = Levels(records);
    let bytes = w.finish(&m).unwrap();
    (m, bytes)
}

fn read(bytes: &[u8]) -> Result<Levels, FormatError> {
    let a = AlignedBytes::from(bytes);
    Container::<Levels>::read(&a).map(Container::into_manifest)
}

fn head(bytes: &[u8]) -> Result<FileHead, FormatError> {
    FileHead::read(bytes, bytes.len() as u64)
}

#[test]
fn the_head_reads_alone_and_each_record_verifies_on_its_own() {
    let (m, bytes) = sample();
    assert_eq!(read(&bytes).unwrap(), m);
    let h = head(&bytes).unwrap();
    assert_eq!(h.parse::<Levels>().unwrap(), m);
    // Only the head is needed: a prefix of exactly its length reads, one byte less
    // says how many bytes it needs.
    let n = h.head_len();
    assert!(n < bytes.len() / 2, "{n} of {}", bytes.len());
    FileHead::read(&bytes[..n], bytes.len() as u64).unwrap();
    match FileHead::read(&bytes[..n - 1], bytes.len() as u64) {
        Err(FormatError::Truncated { needed, .. }) => assert_eq!(needed as usize, n),
        other => panic!("{other:?}"),
    }
    for r in h.records() {
        let range = &bytes[r.offset as usize..(r.offset + r.len) as usize];
        h.verify_record(r.index, range).unwrap();
        // A flipped byte in this record fails this record alone.
        if r.len > 0 {
            let mut b = bytes.clone();
            b[r.offset as usize + r.len as usize / 2] ^= 0x10;
            let h2 = head(&b).expect("the head does not cover records");
            for other in h2.records() {
                let got = &b[other.offset as usize..(other.offset + other.len) as usize];
                let e = h2.verify_record(other.index, got);
                if other.index == r.index {
                    assert!(
                        matches!(e, Err(FormatError::RecordChecksumMismatch { index, .. }) if index == r.index.0),
                        "{e:?}"
                    );
                } else {
                    e.unwrap();
                }
            }
            assert!(
                matches!(read(&b), Err(FormatError::RecordChecksumMismatch { .. })),
                "the whole-file read checks every record"
            );
        }
        // A range of the wrong length is refused.
        if r.len > 0 {
            assert!(h.verify_record(r.index, &range[..range.len() - 1]).is_err());
        }
    }
}

#[test]
fn every_bit_flip_is_caught_by_the_whole_read_and_every_head_flip_by_the_head() {
    let (_, bytes) = sample();
    let head_len = head(&bytes).unwrap().head_len();
    for byte in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[byte] ^= 1 << bit;
            assert!(read(&b).is_err(), "flip at byte {byte} bit {bit}");
            if byte < head_len {
                assert!(head(&b).is_err(), "head flip at byte {byte} bit {bit}");
            }
        }
    }
}

#[test]
fn truncated_files_and_other_versions_are_typed_errors() {
    let (_, bytes) = sample();
    for n in 0..bytes.len() {
        // The file itself is short: the head names the lengths it cannot find.
        let e = FileHead::read(&bytes[..n], n as u64).unwrap_err();
        assert!(
            matches!(
                e,
                FormatError::Truncated { .. } | FormatError::LengthPastEnd { .. }
            ),
            "{n}: {e:?}"
        );
        assert!(read(&bytes[..n]).is_err());
    }
    // A file of another version has no head checked alone.
    let mut w = FileWriter::new(Version::Cooked);
    let r = w.add_record(TAG, &[1, 2, 3]);
    let old = w.finish(&Levels(vec![r])).unwrap();
    assert!(matches!(
        head(&old),
        Err(FormatError::WrongVersion {
            found: 2,
            expected: 3
        })
    ));
}
