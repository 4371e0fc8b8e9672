//! The container attacked: every prefix, every bit flip, each named corruption.

use farsight_format::{
    AlignedBytes, Container, FileWriter, FormatError, Manifest, RawFile, ReadConfig, RecordIndex,
    RecordTag, Section, Version, IDENTIFIER,
};
use serde::{Deserialize, Serialize};

const TAG: RecordTag = RecordTag(*b"TEST");

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Building {
    name: String,
    height: f32,
    levels: Vec<Level>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Level {
    distance: f32,
    meshes: Vec<RecordIndex>,
}

impl Manifest for Building {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        for l in &self.levels {
            for &m in &l.meshes {
                visit(m, TAG);
            }
        }
    }
}

/// The same shape with plain integers, to write manifests no real writer would.
#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct LooseBuilding {
    name: String,
    height: f32,
    levels: Vec<LooseLevel>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct LooseLevel {
    distance: f32,
    meshes: Vec<u32>,
}

impl Manifest for LooseBuilding {
    fn visit_records(&self, _: &mut dyn FnMut(RecordIndex, RecordTag)) {}
}

fn sample() -> (Building, Vec<u8>) {
    let mut w = FileWriter::new(Version::Full);
    let wall = w.add_record(TAG, &[7u8; 40]);
    let roof = w.add_record(TAG, &(0..23u8).collect::<Vec<_>>());
    let wall_again = w.add_record(TAG, &[7u8; 40]);
    assert_eq!(wall, wall_again, "identical records are stored once");
    assert_eq!(w.record_count(), 2);
    let b = Building {
        name: "tower".into(),
        height: 31.5,
        levels: vec![
            Level {
                distance: 60.0,
                meshes: vec![wall, roof],
            },
            Level {
                distance: 250.0,
                meshes: vec![wall_again],
            },
        ],
    };
    let bytes = w.finish(&b).expect("writes");
    (b, bytes)
}

fn read(bytes: &[u8]) -> Result<Building, FormatError> {
    let a = AlignedBytes::from(bytes);
    Container::<Building>::read(&a).map(Container::into_manifest)
}

fn fix_checksum(bytes: &mut [u8]) {
    let crc = crc32fast::hash(&bytes[20..]);
    bytes[16..20].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn round_trip_keeps_structure_and_shares_records() {
    let (b, bytes) = sample();
    assert_eq!(&bytes[..12], &IDENTIFIER);
    let a = AlignedBytes::from(&bytes[..]);
    let file = Container::<Building>::read(&a).unwrap();
    assert_eq!(file.manifest(), &b);
    assert_eq!(file.version(), Version::Full);
    assert_eq!(file.raw().record_count(), 2);
    let l0 = &file.manifest().levels[0];
    let l1 = &file.manifest().levels[1];
    assert_eq!(l0.meshes[0], l1.meshes[0]);
    let wall = file.record(l0.meshes[0]).unwrap();
    assert_eq!(wall.bytes, &[7u8; 40]);
    assert_eq!(wall.tag, TAG);
    let roof = file.record(l0.meshes[1]).unwrap();
    assert_eq!(roof.bytes, &(0..23u8).collect::<Vec<_>>()[..]);
    for r in file.raw().records() {
        assert_eq!(
            r.bytes.as_ptr() as usize % 16,
            0,
            "records are readable in place"
        );
    }
    // The manifest is indented, readable RON.
    let text = file.raw().manifest_text();
    assert!(text.contains("name: \"tower\""), "{text}");
    assert!(text.lines().count() > 5, "indented over lines: {text}");
}

#[test]
fn writing_twice_gives_identical_bytes() {
    assert_eq!(sample().1, sample().1);
}

#[test]
fn every_truncated_prefix_is_a_typed_error() {
    let (_, bytes) = sample();
    for n in 0..bytes.len() {
        match read(&bytes[..n]) {
            Err(FormatError::Truncated { .. }) | Err(FormatError::LengthPastEnd { .. }) => {}
            other => panic!("prefix of {n} bytes gave {other:?}"),
        }
    }
    assert!(read(&bytes).is_ok());
}

#[test]
fn every_single_bit_flip_is_caught() {
    let (_, bytes) = sample();
    for byte in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[byte] ^= 1 << bit;
            let e = read(&b).expect_err("a flipped bit must not read");
            let ok = match byte {
                0..12 => matches!(e, FormatError::WrongIdentifier { .. }),
                // A flip to another known version reads the other layout's checksum.
                12..16 => matches!(
                    e,
                    FormatError::UnknownVersion { .. } | FormatError::ChecksumMismatch { .. }
                ),
                16..20 => matches!(e, FormatError::ChecksumMismatch { .. }),
                20..24 => matches!(e, FormatError::NonZeroPadding { .. }),
                _ => !matches!(
                    e,
                    FormatError::WrongIdentifier { .. } | FormatError::UnknownVersion { .. }
                ),
            };
            assert!(ok, "flip at byte {byte} bit {bit}: {e:?}");
        }
    }
}

#[test]
fn named_corruptions_give_their_errors() {
    let (_, bytes) = sample();

    let mut b = bytes.clone();
    b[1] = b'X';
    assert!(matches!(read(&b), Err(FormatError::WrongIdentifier { found }) if found[1] == b'X'));
    // A text-mode transfer turning CR LF into LF:
    let mut b = bytes.clone();
    b.remove(8);
    assert!(matches!(read(&b), Err(FormatError::WrongIdentifier { .. })));

    let mut b = bytes.clone();
    b[12..16].copy_from_slice(&4u32.to_le_bytes());
    assert!(matches!(
        read(&b),
        Err(FormatError::UnknownVersion { found: 4 })
    ));

    let mut b = bytes.clone();
    b[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        read(&b),
        Err(FormatError::LengthPastEnd {
            section: Section::Manifest,
            length: u64::MAX,
            ..
        })
    ));

    let mut b = bytes.clone();
    b.extend_from_slice(&[0; 5]);
    assert!(matches!(
        read(&b),
        Err(FormatError::TrailingBytes { count: 5 })
    ));

    let mut b = bytes.clone();
    let last = b.len() - 1;
    b[last] ^= 0x40;
    assert!(matches!(
        read(&b),
        Err(FormatError::ChecksumMismatch { .. })
    ));
    // The same change with a fixed checksum is caught structurally (table padding).
    fix_checksum(&mut b);
    assert!(matches!(
        read(&b),
        Err(FormatError::NonZeroPadding {
            section: Section::Table,
            ..
        })
    ));
}

fn loose_file(meshes: Vec<u32>, tag: RecordTag) -> Vec<u8> {
    let mut w = FileWriter::new(Version::Cooked);
    w.add_record(tag, b"only record");
    let m = LooseBuilding {
        name: "x".into(),
        height: 1.0,
        levels: vec![LooseLevel {
            distance: 1.0,
            meshes,
        }],
    };
    w.finish(&m).unwrap()
}

#[test]
fn manifest_indices_are_checked() {
    let ok = loose_file(vec![0], TAG);
    assert!(read(&ok).is_ok());
    let past = loose_file(vec![0, 1], TAG);
    assert!(matches!(
        read(&past),
        Err(FormatError::IndexPastTable {
            index: 1,
            records: 1
        })
    ));
    let wrong = loose_file(vec![0], RecordTag(*b"OTHR"));
    assert!(matches!(
        read(&wrong),
        Err(FormatError::WrongRecordTag { index: 0, expected: TAG, found: RecordTag(f) }) if &f == b"OTHR"
    ));
    // The writer refuses the same mistakes.
    let mut w = FileWriter::new(Version::Full);
    w.add_record(TAG, b"a");
    let b = Building {
        name: "y".into(),
        height: 0.0,
        levels: vec![Level {
            distance: 0.0,
            meshes: vec![RecordIndex(4)],
        }],
    };
    assert!(matches!(
        w.finish(&b),
        Err(FormatError::IndexPastTable {
            index: 4,
            records: 1
        })
    ));
}

#[test]
fn manifest_errors_say_where() {
    // A manifest of another type: RON parse error with a position.
    #[derive(Serialize, Deserialize)]
    struct Other {
        colour: u8,
    }
    impl Manifest for Other {
        fn visit_records(&self, _: &mut dyn FnMut(RecordIndex, RecordTag)) {}
    }
    let bytes = FileWriter::new(Version::Full)
        .finish(&Other { colour: 3 })
        .unwrap();
    match read(&bytes) {
        Err(FormatError::Manifest { line, message, .. }) => {
            assert!(line >= 1);
            assert!(!message.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // Invalid UTF-8 in the manifest (checksum fixed so the text check is reached).
    let (_, mut b) = sample();
    b[33] = 0xFF;
    fix_checksum(&mut b);
    assert!(matches!(
        read(&b),
        Err(FormatError::ManifestNotUtf8 { valid_up_to: 1 })
    ));
}

#[test]
fn directory_corruptions_are_refused_even_without_checksum() {
    let (_, bytes) = sample();
    let a = AlignedBytes::from(&bytes[..]);
    let raw = RawFile::read(&a).unwrap();
    let table_start = bytes.len() - raw.table_len();
    let opts = ReadConfig {
        verify_checksum: false,
    };
    // Record count past the directory space.
    let mut b = bytes.clone();
    b[table_start..table_start + 4].copy_from_slice(&1000u32.to_le_bytes());
    assert!(matches!(
        RawFile::read_with(&b, opts),
        Err(FormatError::LengthPastEnd {
            section: Section::Directory,
            ..
        })
    ));
    // First record's length past the table.
    let mut b = bytes.clone();
    let len_at = table_start + 8 + 16;
    b[len_at..len_at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(matches!(
        RawFile::read_with(&b, opts),
        Err(FormatError::RecordOverrunsTable { index: 0, .. })
    ));
    // Second record's offset off the grid.
    let mut b = bytes.clone();
    let off_at = table_start + 8 + 24 + 8;
    let off = u64::from_le_bytes(b[off_at..off_at + 8].try_into().unwrap());
    b[off_at..off_at + 8].copy_from_slice(&(off + 4).to_le_bytes());
    assert!(matches!(
        RawFile::read_with(&b, opts),
        Err(FormatError::RecordOverrunsTable { index: 1, .. })
    ));
}

#[test]
fn misaligned_buffer_still_reads_bytes() {
    let (b, bytes) = sample();
    let mut shifted = vec![0u8; bytes.len() + 1];
    shifted[1..].copy_from_slice(&bytes);
    let file = Container::<Building>::read(&shifted[1..]).unwrap();
    assert_eq!(file.manifest(), &b);
}
