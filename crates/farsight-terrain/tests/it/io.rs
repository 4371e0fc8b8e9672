//! Save/load through the farsight container, and every kind of bad file.

use farsight_format::{FileWriter, RecordIndex, Version};
use farsight_terrain::*;
use glam::{IVec3, Vec3};
use rand::{Rng, SeedableRng};

fn sample_grid() -> VoxelGrid {
    let mut g = VoxelGrid::new();
    let p = TerrainGeneratorConfig {
        lake: Some((Vec3::new(100.0, 90.0, 100.0), 60.0)),
        ..Default::default()
    };
    generate(&mut g, &p, IVec3::new(0, 0, 0), IVec3::new(1, 1, 1));
    g.set_box(
        Vec3::new(256.0, 0.0, 0.0),
        Vec3::new(511.0, 127.0, 127.0),
        Cell::full(Material::ROCK),
    )
    .unwrap();
    g
}

fn aligned(bytes: &[u8]) -> farsight_format::AlignedBytes {
    farsight_format::AlignedBytes::from(bytes)
}

#[test]
fn round_trip_keeps_every_cell_and_bytes_are_deterministic() {
    let g = sample_grid();
    let bytes = save_grid(&g).unwrap();
    let loaded = load_grid(aligned(&bytes).as_slice()).unwrap();
    loaded.validate().unwrap();
    assert_eq!(loaded.chunk_count(), g.chunk_count());
    assert!(
        g.uniform_chunk_count() > 0 && g.uniform_chunk_count() < g.chunk_count(),
        "{} of {}",
        g.uniform_chunk_count(),
        g.chunk_count()
    );
    for c in g.chunk_coords() {
        assert_eq!(loaded.chunk_cells(c), g.chunk_cells(c), "chunk {c}");
    }
    assert_eq!(loaded.revision(), g.revision());
    assert_ne!(
        loaded.generation(),
        g.generation(),
        "a loaded grid is a new revision sequence"
    );
    assert_eq!(save_grid(&loaded).unwrap(), bytes, "same grid, same bytes");
    // Through a real file on disk.
    let path =
        std::env::temp_dir().join(format!("farsight-terrain-{}.farsight", std::process::id()));
    write_grid(&g, &path).unwrap();
    let from_disk = read_grid(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(from_disk.chunk_count(), g.chunk_count());
}

#[test]
fn corrupt_files_are_typed_errors_and_leave_the_grid_alone() {
    let g = sample_grid();
    let bytes = save_grid(&g).unwrap();
    let mut live = load_grid(aligned(&bytes).as_slice()).unwrap();
    let before = live.revision();
    let mut try_load = |b: &[u8]| -> TerrainFileError {
        match load_grid(aligned(b).as_slice()) {
            Ok(_) => panic!("a corrupt file loaded"),
            Err(e) => {
                // Only replace the live grid on success: it is untouched here.
                assert_eq!(live.revision(), before);
                let _ = &mut live;
                e
            }
        }
    };
    // Truncations: every prefix through the header and manifest, then a stride.
    let mut cuts: Vec<usize> = (0..600.min(bytes.len())).collect();
    cuts.extend((600..bytes.len()).step_by(997));
    for n in cuts {
        assert!(
            matches!(try_load(&bytes[..n]), TerrainFileError::Format(_)),
            "prefix {n}"
        );
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    for _ in 0..200 {
        let mut b = bytes.clone();
        let i = rng.random_range(0..b.len());
        b[i] ^= 1 << rng.random_range(0..8);
        let _ = try_load(&b);
    }
    let mut trailing = bytes.clone();
    trailing.extend_from_slice(&[0; 16]);
    assert!(matches!(try_load(&trailing), TerrainFileError::Format(_)));
}

#[test]
fn another_version_word_is_refused() {
    // The checksum does not cover the version word: a swapped one loaded before.
    let bytes = save_grid(&sample_grid()).unwrap();
    for word in [2u32, 3] {
        let mut b = bytes.clone();
        b[12..16].copy_from_slice(&word.to_le_bytes());
        match load_grid(aligned(&b).as_slice()) {
            Err(TerrainFileError::Format(farsight_format::FormatError::WrongVersion {
                found,
                expected: 1,
            })) => assert_eq!(found, word),
            // Version 3 also moves what the checksum covers.
            Err(TerrainFileError::Format(farsight_format::FormatError::ChecksumMismatch {
                ..
            })) if word == 3 => {}
            Err(e) => panic!("version {word}: {e}"),
            Ok(_) => panic!("a terrain save with version word {word} loaded"),
        }
    }
}

fn file_with(chunks: Vec<ChunkRef>, records: &[Vec<u8>], kind: &str) -> Vec<u8> {
    let mut w = FileWriter::new(Version::Full);
    for r in records {
        w.add_record(CHUNK_TAG, r);
    }
    let m = TerrainManifest {
        kind: kind.into(),
        format: TERRAIN_FORMAT,
        cell_size: CELL_SIZE,
        chunk_cells: 32,
        revision: 3,
        chunks,
    };
    w.finish(&m).unwrap()
}

#[test]
fn valid_containers_with_bad_terrain_are_refused() {
    let load = |b: Vec<u8>| load_grid(aligned(&b).as_slice()).expect_err("refused");
    let uniform = |coord, cell: [u8; 2]| ChunkRef {
        coord,
        uniform: Some(cell),
        record: None,
    };
    assert!(matches!(
        load(file_with(vec![], &[], "farsight-building")),
        TerrainFileError::WrongKind { .. }
    ));
    assert!(matches!(
        load(file_with(
            vec![uniform([0, 0, 0], [3, 255]), uniform([0, 0, 0], [3, 255])],
            &[],
            TERRAIN_KIND
        )),
        TerrainFileError::DuplicateChunk { .. }
    ));
    assert!(matches!(
        load(file_with(
            vec![uniform([0, 0, 0], [0, 9])],
            &[],
            TERRAIN_KIND
        )),
        TerrainFileError::NonCanonicalCell { .. }
    ));
    assert!(matches!(
        load(file_with(
            vec![uniform([0, 0, 0], [0, 0])],
            &[],
            TERRAIN_KIND
        )),
        TerrainFileError::BadChunk { .. }
    ));
    assert!(matches!(
        load(file_with(
            vec![uniform([1 << 30, 0, 0], [3, 255])],
            &[],
            TERRAIN_KIND
        )),
        TerrainFileError::ChunkOutOfRange { .. }
    ));
    let dense = |coord| ChunkRef {
        coord,
        uniform: None,
        record: Some(RecordIndex(0)),
    };
    let short = lz4_flex::block::compress(&[3u8; 1000]);
    assert!(matches!(
        load(file_with(vec![dense([0, 0, 0])], &[short], TERRAIN_KIND)),
        TerrainFileError::BadRecord { .. }
    ));
    let garbage = vec![0xffu8; 64];
    assert!(matches!(
        load(file_with(vec![dense([0, 0, 0])], &[garbage], TERRAIN_KIND)),
        TerrainFileError::BadRecord { .. }
    ));
    let mut full = vec![0u8; 65536];
    for c in full.chunks_exact_mut(2) {
        c.copy_from_slice(&[3, 200]);
    }
    let one = lz4_flex::block::compress(&full);
    assert!(
        load_grid(
            aligned(&file_with(
                vec![dense([0, 0, 0])],
                std::slice::from_ref(&one),
                TERRAIN_KIND
            ))
            .as_slice()
        )
        .is_ok(),
        "one chunk per record loads"
    );
    assert!(matches!(
        load(file_with(
            vec![dense([0, 0, 0]), dense([1, 0, 0])],
            &[one],
            TERRAIN_KIND
        )),
        TerrainFileError::BadChunk {
            coord: [1, 0, 0],
            ..
        }
    ));
    let mut cells = vec![0u8; 65536];
    cells[2] = 7; // material 7 with zero occupancy
    let bad = lz4_flex::block::compress(&cells);
    assert!(matches!(
        load(file_with(vec![dense([0, 0, 0])], &[bad], TERRAIN_KIND)),
        TerrainFileError::NonCanonicalCell { index: 1, .. }
    ));
}

/// Mutate `bytes` into one random variant: bit flips, random bytes, an extreme
/// little-endian word, a truncation, or a splice of its own bytes.
fn mutate(rng: &mut impl Rng, bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for _ in 0..rng.random_range(1..4) {
        if b.is_empty() {
            break;
        }
        let i = rng.random_range(0..b.len());
        match rng.random_range(0..5) {
            0 => b[i] ^= 1 << rng.random_range(0..8),
            1 => b[i] = rng.random(),
            2 => {
                let w: u32 = [0, 1, u32::MAX, 1 << 31, 65536, 65535][rng.random_range(0..6)];
                let end = (i + 4).min(b.len());
                b[i..end].copy_from_slice(&w.to_le_bytes()[..end - i]);
            }
            3 => b.truncate(i),
            _ => {
                let j = rng.random_range(0..b.len());
                let n = rng.random_range(1..64).min(b.len() - i).min(b.len() - j);
                let src = b[j..j + n].to_vec();
                b[i..i + n].copy_from_slice(&src);
            }
        }
    }
    b
}

/// Mutated files through the reader with the checksum off, so mutations reach the
/// manifest, record and cell checks: typed errors or a valid grid, never a panic.
/// `FARSIGHT_FUZZ_SECS=n` runs for n seconds instead of a fixed count (the long run
/// is `--ignored`; see BENCHMARKS.md).
fn random_inputs(rounds: Option<usize>, secs: u64) -> usize {
    let g = sample_grid();
    let bytes = save_grid(&g).unwrap();
    let small = {
        let mut s = VoxelGrid::new();
        s.set_sphere(Vec3::new(60.0, 60.0, 60.0), 30.0, Material::SAND)
            .unwrap();
        save_grid(&s).unwrap()
    };
    if let Ok(dir) = std::env::var("FARSIGHT_TERRAIN_SEED_DIR") {
        // Seeds for the cargo-fuzz target `terrain_grid`.
        std::fs::write(format!("{dir}/sample.farsight"), &bytes).unwrap();
        std::fs::write(format!("{dir}/sphere.farsight"), &small).unwrap();
    }
    let opts = farsight_format::ReadConfig {
        verify_checksum: false,
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(77);
    let start = std::time::Instant::now();
    let mut n = 0;
    let (mut ok, mut refused) = (0, 0);
    loop {
        if rounds.is_some_and(|r| n >= r) || (rounds.is_none() && start.elapsed().as_secs() >= secs)
        {
            break;
        }
        let base = if n % 4 == 0 { &bytes } else { &small };
        let b = mutate(&mut rng, base);
        match load_grid_with(aligned(&b).as_slice(), opts) {
            Ok(grid) => {
                grid.validate().unwrap();
                ok += 1;
            }
            Err(_) => refused += 1,
        }
        n += 1;
    }
    assert!(refused > n / 2, "{refused} of {n} refused");
    eprintln!("{n} mutated files: {ok} loaded, {refused} refused");
    n
}

#[test]
fn mutated_files_never_panic() {
    random_inputs(Some(1500), 0);
}

#[test]
#[ignore = "long run: FARSIGHT_FUZZ_SECS=120 cargo test -p farsight-terrain --release --test io -- --ignored"]
fn mutated_files_never_panic_long() {
    let secs = std::env::var("FARSIGHT_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    random_inputs(None, secs);
}
