//! A long random-mutation run over every reader, for machines without cargo-fuzz.
//! Ignored by default; run with
//! `FARSIGHT_FUZZ_SECS=600 cargo test -p farsight-format --release --test it random_inputs -- --ignored --nocapture`.

use std::time::{Duration, Instant};

use farsight_format::{
    cook_mesh, cook_mesh_set, describe_record, encode_cluster_level, encode_full,
    push_cluster_slot, AlignedBytes, ClusterInfo, ClusterLevel, ClusterLevelHeader, ClusterVertex,
    CookConfig, CookedMesh, CookedSet, DecodeScratch, FileWriter, FullMesh, Manifest, MeshData,
    RawFile, ReadConfig, RecordIndex, RecordTag, Version,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(serde::Serialize, serde::Deserialize)]
struct Seed {
    records: Vec<RecordIndex>,
}
impl Manifest for Seed {
    fn visit_records(&self, _: &mut dyn FnMut(RecordIndex, RecordTag)) {}
}

fn seeds() -> Vec<(RecordTag, Vec<u8>)> {
    let mut m = MeshData::default();
    for y in 0..6u32 {
        for x in 0..6u32 {
            m.positions.push([x as f32, (x * y) as f32 * 0.1, y as f32]);
            m.uvs.push([x as f32 * 3.0, y as f32 * 3.0]);
        }
    }
    for y in 0..5 {
        for x in 0..5 {
            let i = y * 6 + x;
            m.indices.extend([i, i + 6, i + 1, i + 1, i + 6, i + 7]);
        }
    }
    let cooked = cook_mesh(&m, &CookConfig::default()).unwrap();
    // A set of the mesh twice and a small distinct part: one record referenced twice,
    // the body as one zstd frame; and the same set with its body stored raw.
    let mut small = m.clone();
    small.indices.truncate(12);
    let set_parts = [m.clone(), small, m.clone()];
    let set = cook_mesh_set(&set_parts, &CookConfig::default()).unwrap();
    let raw_set = cook_mesh_set(
        &set_parts,
        &CookConfig {
            entropy: false,
            ..CookConfig::default()
        },
    )
    .unwrap();
    let full = encode_full(&m).unwrap();
    let verts: Vec<ClusterVertex> = (0..10)
        .map(|i| ClusterVertex {
            position: [i, i, i],
            ..bytemuck::Zeroable::zeroed()
        })
        .collect();
    let mut idx = Vec::new();
    push_cluster_slot(&[0, 1, 2, 3, 4, 5], &mut idx);
    let info = ClusterInfo {
        sphere: [0.0; 4],
        parent_sphere: [0.0; 4],
        error: 0.0,
        parent_error: 1.0,
        triangle_count: 2,
        material: 0,
        group: 0,
    };
    let h = ClusterLevelHeader {
        level: 0,
        cluster_count: 1,
        vertex_count: 10,
        slot_shift: 7,
        bounds_min: [0.0; 3],
        max_parent_error: 1.0,
        bounds_max: [1.0; 3],
        max_error: 0.0,
        triangle_count: 2,
        material_count: 1,
        reserved: [0; 2],
    };
    let cluster = encode_cluster_level(&h, &[info], &verts, &idx).unwrap();
    let mut w = FileWriter::new(Version::Cooked);
    let a = w.add_record(RecordTag::MESH_COOKED, &cooked);
    let b = w.add_record(RecordTag::MESH_FULL, &full);
    let c = w.add_record(RecordTag::CLUSTER_LEVEL, &cluster);
    let file = w
        .finish(&Seed {
            records: vec![a, b, c],
        })
        .unwrap();
    vec![
        (RecordTag(*b"FILE"), file),
        (RecordTag::MESH_COOKED, cooked),
        (RecordTag::MESH_FULL, full),
        (RecordTag::CLUSTER_LEVEL, cluster),
        (RecordTag::MESH_COOKED_SET, set),
        (RecordTag::MESH_COOKED_SET, raw_set),
        (RecordTag::MESH_COOKED, ranged_tile()),
    ]
}

/// A terrain tile whose residuals are range-coded (codecs 6 and 7).
fn ranged_tile() -> Vec<u8> {
    let tile = cook_mesh(&crate::tile::terrain_tile(48, 2.0), &CookConfig::default()).unwrap();
    let h = CookedMesh::parse(&tile).unwrap().header;
    assert!(h.streams.iter().any(|s| s.codec == 6 || s.codec == 7));
    tile
}

fn run_reader(
    tag: RecordTag,
    bytes: &[u8],
    out: &mut MeshData,
    scratch: &mut DecodeScratch,
) -> bool {
    let aligned = AlignedBytes::from(bytes);
    match tag {
        RecordTag::MESH_COOKED => CookedMesh::parse(bytes)
            .and_then(|m| m.decode_into(out, scratch))
            .is_ok(),
        RecordTag::MESH_COOKED_SET => {
            let mut meshes = Vec::new();
            CookedSet::parse(bytes)
                .and_then(|s| s.decode_into(&mut meshes, scratch))
                .is_ok()
        }
        RecordTag::MESH_FULL => FullMesh::parse(&aligned).is_ok(),
        RecordTag::CLUSTER_LEVEL => ClusterLevel::parse(&aligned).is_ok(),
        _ => match RawFile::read_with(
            &aligned,
            ReadConfig {
                verify_checksum: false,
            },
        ) {
            Ok(raw) => raw.records().all(|r| describe_record(&r).is_ok()),
            Err(_) => false,
        },
    }
}

#[test]
#[ignore = "long run; see the file header"]
fn random_mutations_never_panic() {
    let secs: u64 = std::env::var("FARSIGHT_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let seeds = seeds();
    let mut rng = ChaCha8Rng::seed_from_u64(0xF00D);
    let mut out = MeshData::default();
    let mut scratch = DecodeScratch::default();
    let start = Instant::now();
    let (mut runs, mut accepted) = (0u64, 0u64);
    while start.elapsed() < Duration::from_secs(secs) {
        for _ in 0..256 {
            let (tag, seed) = &seeds[rng.random_range(0..seeds.len())];
            let mut b = seed.clone();
            match rng.random_range(0..4) {
                0 => {
                    for _ in 0..rng.random_range(1..8) {
                        let i = rng.random_range(0..b.len());
                        b[i] ^= 1 << rng.random_range(0..8);
                    }
                }
                1 => {
                    let i = rng.random_range(0..b.len());
                    b[i] = rng.random();
                }
                2 => b.truncate(rng.random_range(0..b.len())),
                _ => {
                    // Overwrite a little-endian word with an extreme value.
                    let i = rng.random_range(0..b.len().saturating_sub(4).max(1));
                    let v: u32 =
                        [0, 1, u32::MAX, 0x8000_0000, rng.random()][rng.random_range(0..5)];
                    let end = (i + 4).min(b.len());
                    b[i..end].copy_from_slice(&v.to_le_bytes()[..end - i]);
                }
            }
            accepted += run_reader(*tag, &b, &mut out, &mut scratch) as u64;
            runs += 1;
        }
    }
    println!(
        "random mutations: {runs} inputs in {:?}, {accepted} read without error, no panic",
        start.elapsed()
    );
}
