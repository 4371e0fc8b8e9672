//! A short, deterministic mutation run over every reader of the crate, for CI
//! machines without nightly cargo-fuzz (`.ci/run` runs it): seeded bit flips,
//! byte writes, extreme words, truncations and splices of real files
//! (`tests/fuzz_seeds/`, cooked by `farsight cook mesh` from `testdata/meshes`) and
//! of the records inside them. Any panic fails the run (the input is saved and
//! named), and so does any allocation larger than the input could justify: the
//! allocator below records the largest request of each input, which must stay
//! under `ALLOC_FACTOR * (MAX_EXPANSION * len + EXPANSION_SLACK) + ALLOC_FLOOR`.
//!
//! `cargo run -p farsight-format --example fuzz_readers [-- INPUTS_PER_SEED]`
//! (default 20,000 per seed).

#![allow(unsafe_code)] // the allocator below implements the unsafe `GlobalAlloc` trait

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use farsight_format::{
    describe_record, reference, AlignedBytes, ClusterLevel, ClusterMeshManifest, Container,
    CookedMesh, CookedSet, DecodeScratch, FileHead, FullMesh, MeshData, RawFile, ReadConfig,
    RecordTag, Version, EXPANSION_SLACK, MAX_EXPANSION,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The allocator: the system's, recording the largest single request made on each
/// thread since [`take_largest`], and refusing (so the program aborts naming the
/// size) any request over [`ALLOC_CEILING`].
struct Largest;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// No input may ask for more than this at once, whatever its size.
const ALLOC_CEILING: usize = 1 << 30;
/// A decoded value may take several times its stored code (a 16-bit position
/// becomes three f32s), and a growing buffer doubles: the factor over the
/// expansion bound an input may allocate at once.
const ALLOC_FACTOR: usize = 8;
/// Fixed allocations any input may make (zstd's decompression context, tables).
const ALLOC_FLOOR: usize = 4 << 20;

fn note(size: usize) -> bool {
    // `try_with`: the thread-local may be gone while a thread is torn down.
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    size <= ALLOC_CEILING
}

// SAFETY: every call is forwarded to the system allocator unchanged, or refused
// with a null pointer (which the caller handles as an allocation failure).
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !note(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's pointer, layout and size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Largest = Largest;

fn take_largest() -> usize {
    LARGEST.with(|l| l.replace(0))
}

/// What a seed is read as.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A whole file: every reader of files, then every record's reader.
    File,
    /// One record, read by the readers of its tag (fast and reference).
    Record(RecordTag),
}

/// Reads `bytes` as `kind` with every reader that applies; errors are expected,
/// only panics and over-allocation are failures.
fn read_all(kind: Kind, bytes: &[u8], out: &mut MeshData, scratch: &mut DecodeScratch) {
    match kind {
        Kind::Record(tag) => read_record(tag, bytes, out, scratch),
        Kind::File => {
            let _ = reference::container(bytes);
            let aligned = AlignedBytes::from(bytes);
            let _ = Container::<ClusterMeshManifest>::read(&aligned);
            if let Ok(head) = FileHead::read(bytes, bytes.len() as u64) {
                let _ = head.parse::<ClusterMeshManifest>();
                for r in head.records() {
                    let range = r.offset as usize..r.offset.saturating_add(r.len) as usize;
                    if let Some(b) = bytes.get(range) {
                        let _ = head.verify_record(r.index, b);
                        let _ = r.verify(b);
                    }
                }
            }
            let options = ReadConfig {
                verify_checksum: false,
            };
            if let Ok(raw) = RawFile::read_with(&aligned, options) {
                let _ = raw.require_version(Version::Streamed);
                for r in raw.records() {
                    let _ = describe_record(&r);
                    read_record(r.tag, r.bytes, out, scratch);
                }
            }
        }
    }
}

fn read_record(tag: RecordTag, bytes: &[u8], out: &mut MeshData, scratch: &mut DecodeScratch) {
    let aligned = AlignedBytes::from(bytes);
    match tag {
        RecordTag::MESH_COOKED => {
            if let Ok(m) = CookedMesh::parse(&aligned) {
                let _ = m.decode_into(out, scratch);
            }
            let _ = reference::cooked_mesh(bytes);
        }
        RecordTag::MESH_COOKED_SET => {
            let mut meshes = Vec::new();
            if let Ok(s) = CookedSet::parse(&aligned) {
                let _ = s.decode_into(&mut meshes, scratch);
            }
            let _ = reference::cooked_set(bytes);
        }
        RecordTag::MESH_FULL => {
            let _ = FullMesh::parse(&aligned);
            let _ = reference::full_mesh(bytes);
        }
        RecordTag::CLUSTER_LEVEL => {
            let _ = ClusterLevel::parse(&aligned);
            let _ = reference::cluster_level(bytes);
        }
        _ => {}
    }
}

/// A position in `len` bytes: half the time in the first 256 (record and file
/// headers, where most fields that size the rest lie), else anywhere.
fn position(rng: &mut ChaCha8Rng, len: usize) -> usize {
    if rng.random_bool(0.5) {
        rng.random_range(0..len.min(256))
    } else {
        rng.random_range(0..len)
    }
}

/// One mutation of `seed` (splicing with `other`, a seed of the same kind).
fn mutate(rng: &mut ChaCha8Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    if b.is_empty() {
        return b;
    }
    match rng.random_range(0..6) {
        0 => {
            for _ in 0..rng.random_range(1..8) {
                let i = position(rng, b.len());
                b[i] ^= 1 << rng.random_range(0..8);
            }
        }
        1 => {
            let i = position(rng, b.len());
            b[i] = rng.random();
        }
        2 => b.truncate(rng.random_range(0..b.len())),
        3 => {
            // A little-endian word overwritten with an extreme value.
            let i = position(rng, b.len());
            let v: u32 = [0, 1, u32::MAX, 0x8000_0000, rng.random()][rng.random_range(0..5)];
            let end = (i + 4).min(b.len());
            b[i..end].copy_from_slice(&v.to_le_bytes()[..end - i]);
        }
        4 => {
            // Splice: this seed's head, the other's tail.
            let cut = rng.random_range(0..b.len());
            let from = rng.random_range(0..other.len().max(1));
            b.truncate(cut);
            b.extend_from_slice(other.get(from..).unwrap_or(&[]));
        }
        _ => {
            // A run of bytes repeated over another place (lengths, offsets, counts
            // that agree with each other but not with the data).
            let (i, j) = (position(rng, b.len()), position(rng, b.len()));
            let n = rng.random_range(1..=16).min(b.len() - i.max(j));
            b.copy_within(i..i + n, j);
        }
    }
    b
}

fn main() {
    let per_seed: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("INPUTS_PER_SEED: a whole number"))
        .unwrap_or(20_000);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_seeds");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    // Seeds: each file, and each distinct record inside the files.
    let mut seeds: Vec<(String, Kind, Vec<u8>)> = Vec::new();
    for path in &names {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let aligned = AlignedBytes::from(&bytes[..]);
        let raw = RawFile::read(&aligned).unwrap_or_else(|e| panic!("seed {name}: {e}"));
        for (i, r) in raw.records().enumerate() {
            seeds.push((
                format!("{name} record {i}"),
                Kind::Record(r.tag),
                r.bytes.to_vec(),
            ));
        }
        seeds.push((name, Kind::File, bytes));
    }
    assert!(seeds.len() >= 8, "too few seeds in {}", dir.display());
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_F022);
    let (mut out, mut scratch) = (MeshData::default(), DecodeScratch::default());
    let start = Instant::now();
    let mut inputs = 0u64;
    for (s, (name, kind, seed)) in seeds.iter().enumerate() {
        let same_kind: Vec<usize> = (0..seeds.len()).filter(|&o| seeds[o].1 == *kind).collect();
        for n in 0..per_seed {
            let other = &seeds[same_kind[rng.random_range(0..same_kind.len())]].2;
            let input = mutate(&mut rng, seed, other);
            take_largest();
            let result = catch_unwind(AssertUnwindSafe(|| {
                read_all(*kind, &input, &mut out, &mut scratch)
            }));
            let largest = take_largest();
            let allowed = ALLOC_FACTOR
                * (MAX_EXPANSION as usize * input.len() + EXPANSION_SLACK as usize)
                + ALLOC_FLOOR;
            if result.is_err() || largest > allowed {
                let saved = std::env::temp_dir().join(format!("fuzz_readers_{s}_{n}.bin"));
                std::fs::write(&saved, &input).unwrap();
                eprintln!(
                    "fuzz_readers: seed {name} ({kind:?}) input {n}: {}; input saved to {}",
                    if result.is_err() {
                        "a reader panicked".to_owned()
                    } else {
                        format!(
                            "one allocation of {largest} bytes for {} input bytes",
                            input.len()
                        )
                    },
                    saved.display()
                );
                std::process::exit(1);
            }
            // Buffers grown by one input must not carry into the next's count.
            out = MeshData::default();
            scratch = DecodeScratch::default();
            inputs += 1;
        }
    }
    println!(
        "fuzz_readers: {inputs} inputs from {} seeds in {:.1} s: no panic, no allocation over the bound",
        seeds.len(),
        start.elapsed().as_secs_f64()
    );
}
