//! The fast readers held to the plain reference reader (`src/reference.rs`, written
//! from `FORMAT.md` alone): on every corpus mesh, cooked several ways, the two decode
//! the same bits; on damaged records both accept with the same output or both refuse,
//! and neither panics.

use std::collections::BTreeSet;
use std::path::Path;

use farsight_format::reference::{self, RefLevel, RefSet, RefSpan};
use farsight_format::{
    cook_mesh, cook_mesh_set, encode_cluster_level, encode_full, push_cluster_slot, AlignedBytes,
    ClusterInfo, ClusterLevel, ClusterLevelHeader, ClusterVertex, CookConfig, CookedHeader,
    CookedMesh, CookedSet, FileWriter, FloatVertex, FullMesh, Manifest, MeshData, RawFile,
    RecordIndex, RecordTag, Version,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[path = "support/gltf_parts.rs"]
mod gltf_parts;
#[path = "support/obj.rs"]
mod obj;
#[path = "support/tile.rs"]
mod tile;

/// A corpus file's meshes: an OBJ as one mesh, a glTF as one mesh per triangle
/// primitive (those a writer takes: indexed, whole triangles).
fn load(path: &Path) -> Vec<MeshData> {
    if path.extension().is_some_and(|e| e == "obj") {
        return vec![obj::obj_mesh(path).unwrap_or_else(|e| panic!("{e}"))];
    }
    let mut parts = gltf_parts::gltf_parts(path).unwrap_or_else(|e| panic!("{e}"));
    for m in &mut parts {
        m.indices.truncate(m.indices.len() / 3 * 3);
    }
    parts.retain(|m| !m.indices.is_empty() && m.validate().is_ok());
    parts
}

fn bits<const N: usize>(v: &[[f32; N]]) -> Vec<[u32; N]> {
    v.iter().map(|a| a.map(f32::to_bits)).collect()
}

/// The two decodes are the same bits.
fn same_mesh(fast: &MeshData, reference: &MeshData) -> bool {
    bits(&fast.positions) == bits(&reference.positions)
        && bits(&fast.normals) == bits(&reference.normals)
        && bits(&fast.tangents) == bits(&reference.tangents)
        && bits(&fast.uvs) == bits(&reference.uvs)
        && fast.indices == reference.indices
        && fast.provenance == reference.provenance
}

/// Both readers' results agree: both accept with `same` output, or both refuse.
/// Returns whether they accepted.
fn agree<F, R, E: std::fmt::Debug, G: std::fmt::Debug>(
    fast: Result<F, E>,
    reference: Result<R, G>,
    same: impl FnOnce(&F, &R) -> bool,
    what: &str,
) -> bool {
    match (&fast, &reference) {
        (Ok(f), Ok(r)) => assert!(same(f, r), "{what}: the outputs differ"),
        (Err(_), Err(_)) => {}
        _ => panic!(
            "{what}: fast {:?} but reference {:?}",
            fast.as_ref().err(),
            reference.as_ref().err()
        ),
    }
    fast.is_ok()
}

fn check_cooked(record: &[u8], what: &str) -> bool {
    let fast = CookedMesh::parse(record).and_then(|m| m.decode());
    agree(fast, reference::cooked_mesh(record), same_mesh, what)
}

/// Parts compared per set: the first ones and the last (a damaged count can name
/// billions).
const PARTS_COMPARED: u64 = 64;

fn check_set(record: &[u8], what: &str) -> bool {
    let fast = CookedSet::parse(record).and_then(|s| Ok((s.decode()?, s)));
    let same = |(meshes, set): &(Vec<MeshData>, CookedSet<'_>), r: &RefSet| {
        let parts = set.part_count() as u64;
        let spans_agree = (0..parts.min(PARTS_COMPARED))
            .chain([parts.saturating_sub(1)])
            .all(|p| {
                let f = set.part_span(p as usize).map(|s| RefSpan {
                    record: s.record,
                    first_triangle: s.first_triangle,
                    triangle_count: s.triangle_count,
                });
                f == r.part_span(p)
            });
        meshes.len() == r.records.len()
            && meshes.iter().zip(&r.records).all(|(f, s)| same_mesh(f, s))
            && parts == r.part_count()
            && spans_agree
    };
    agree(fast, reference::cooked_set(record), same, what)
}

fn check_full(record: &[u8], what: &str) -> bool {
    let aligned = AlignedBytes::from(record);
    let fast = FullMesh::parse(&aligned).map(|m| m.to_mesh());
    agree(fast, reference::full_mesh(record), same_mesh, what)
}

/// Bits equal, any NaN equal to any NaN (half-float NaN payloads widen either way).
fn same_floats(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// A fast cluster level and the reference's read agree.
fn same_level(fast: &ClusterLevel<'_>, r: &RefLevel) -> bool {
    let h = fast.header;
    let decoded: Vec<FloatVertex> = fast
        .vertices
        .iter()
        .map(|v| v.unpack(h.bounds_min, h.bounds_max))
        .collect();
    let floats = |v: &[FloatVertex]| -> Vec<f32> {
        v.iter()
            .flat_map(|x| {
                x.position
                    .into_iter()
                    .chain(x.normal)
                    .chain(x.tangent)
                    .chain(x.uv)
            })
            .collect()
    };
    bytemuck::bytes_of(&h) == bytemuck::bytes_of(&r.header)
        && bytemuck::cast_slice::<_, u8>(fast.clusters)
            == bytemuck::cast_slice::<_, u8>(&r.clusters)
        && fast.vertices == &r.vertices[..]
        && fast.indices == &r.indices[..]
        && same_floats(&floats(&decoded), &floats(&r.decoded))
}

fn check_level(record: &[u8], what: &str) -> bool {
    let aligned = AlignedBytes::from(record);
    agree(
        ClusterLevel::parse(&aligned),
        reference::cluster_level(record),
        same_level,
        what,
    )
}

type FileParts = (u32, String, Vec<([u8; 4], Vec<u8>)>);

fn check_file(file: &[u8], what: &str) -> bool {
    let aligned = AlignedBytes::from(file);
    let fast = RawFile::read(&aligned).map(|f| -> FileParts {
        let records = f.records().map(|r| (r.tag.0, r.bytes.to_vec())).collect();
        (f.version() as u32, f.manifest_text().to_owned(), records)
    });
    let slow = reference::container(file).map(|f| -> FileParts {
        let records = f.records.into_iter().map(|r| (r.tag, r.bytes)).collect();
        (f.version, f.manifest, records)
    });
    agree(fast, slow, |a, b| a == b, what)
}

/// A cluster level over a mesh's vertices: its triangles in clusters of up to a
/// slot each, every vertex packed in the mesh's bounds.
fn cluster_level(m: &MeshData) -> Vec<u8> {
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for p in &m.positions {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let vertices: Vec<ClusterVertex> = (0..m.positions.len())
        .map(|i| {
            let v = FloatVertex {
                position: m.positions[i],
                normal: m.normals.get(i).copied().unwrap_or([0.0, 0.0, 1.0]),
                tangent: if i % 3 == 0 {
                    [1.0, 0.0, 0.0, -1.0]
                } else {
                    [0.0, 1.0, 0.0, 1.0]
                },
                uv: m.uvs.get(i).copied().unwrap_or([0.25, -3.5]),
            };
            ClusterVertex::pack(&v, lo, hi)
        })
        .collect();
    let mut clusters = Vec::new();
    let mut indices = Vec::new();
    for (c, tris) in m.indices.chunks(3 * 128).enumerate() {
        push_cluster_slot(tris, &mut indices);
        clusters.push(ClusterInfo {
            sphere: [lo[0], lo[1], lo[2], 1.0 + c as f32],
            parent_sphere: [hi[0], hi[1], hi[2], 2.0],
            error: 0.5,
            parent_error: f32::MAX,
            triangle_count: (tris.len() / 3) as u16,
            material: (c % 2) as u16,
            group: c as u32 / 4,
        });
    }
    let header = ClusterLevelHeader {
        level: 1,
        cluster_count: clusters.len() as u32,
        vertex_count: vertices.len() as u32,
        slot_shift: 7,
        bounds_min: lo,
        max_parent_error: f32::MAX,
        bounds_max: hi,
        max_error: 0.5,
        triangle_count: m.triangle_count() as u32,
        material_count: 2,
        reserved: [0; 2],
    };
    encode_cluster_level(&header, &clusters, &vertices, &indices).expect("a valid level")
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Records(Vec<RecordIndex>);

impl Manifest for Records {
    fn visit_records(&self, _: &mut dyn FnMut(RecordIndex, RecordTag)) {}
}

/// A file of `records` in `version`.
fn file(version: Version, records: &[(RecordTag, &[u8])]) -> Vec<u8> {
    let mut w = FileWriter::new(version);
    let list = records.iter().map(|(t, b)| w.add_record(*t, b)).collect();
    w.finish(&Records(list)).expect("a file")
}

/// The cook options the corpus is cooked with: the defaults (the smallest coding
/// of each stream), without the entropy layer (raw and meshopt streams), and
/// without prediction at other depths (at a fast zstd level: cooking is most of
/// the corpus test's time).
fn variants() -> [CookConfig; 3] {
    let base = CookConfig::default();
    [
        base,
        CookConfig {
            entropy: false,
            ..base
        },
        CookConfig {
            zstd_level: 3,
            predict_positions: false,
            predict_uvs: false,
            predict_normals: false,
            position_bits: 12,
            normal_bits: 10,
            uv_bits: 11,
            ..base
        },
    ]
}

/// What a cooked record exercises: its flags, its codecs, `uv_axes` and damping.
fn features(record: &[u8], seen: &mut BTreeSet<String>) {
    let h: CookedHeader = CookedMesh::parse(record).expect("a record").header;
    for bit in 0..8 {
        if h.flags & (1 << bit) != 0 {
            seen.insert(format!("flag {}", 1 << bit));
        }
    }
    for s in &h.streams {
        if s.decoded_len > 0 {
            seen.insert(format!("codec {}", s.codec));
        }
    }
    if h.uv_axes != 0 {
        seen.insert("uv_axes".into());
    }
    if h.position_damping != 0 {
        seen.insert("damping".into());
    }
    if h.flags & CookedHeader::SHARED_POSITIONS != 0 {
        seen.insert(format!("remap codec {}", h.remap_codec));
    }
}

#[test]
fn every_corpus_mesh_decodes_as_the_reference() {
    let corpus = farsight_testkit::corpus();
    assert!(!corpus.is_empty());
    let mut seen = BTreeSet::new();
    let mut records = 0;
    // The corpus, and two generated meshes for what it may lack: a terrain tile
    // (uvs that follow its positions) and split quads (shared positions).
    let mut meshes: Vec<(String, Vec<MeshData>)> = corpus
        .iter()
        .map(|p| (p.display().to_string(), load(p)))
        .collect();
    meshes.push(("tile".into(), vec![tile::terrain_tile(24, 4.0)]));
    for (name, parts) in &meshes {
        assert!(!parts.is_empty(), "{name}: no triangle mesh");
        for (i, part) in parts.iter().enumerate() {
            // Every part cooked the first two ways, the first part the third way too
            // (cooking is most of this test's time).
            let ways = if i == 0 { 3 } else { 2 };
            for (v, opts) in variants().iter().enumerate().take(ways) {
                let record = cook_mesh(part, opts).unwrap();
                features(&record, &mut seen);
                let what = format!("{name} part {i} variant {v}");
                assert!(check_cooked(&record, &what), "{what}: refused");
                records += 1;
            }
            let what = format!("{name} part {i}");
            assert!(check_full(&encode_full(part).unwrap(), &what));
            assert!(check_level(&cluster_level(part), &what));
        }
        let fast = CookConfig {
            zstd_level: 3,
            ..CookConfig::default()
        };
        let set = cook_mesh_set(parts, &fast).unwrap();
        assert!(
            check_set(&set, &format!("{name} set")),
            "{name}: set refused"
        );
        let cooked = cook_mesh(&parts[0], &CookConfig::default()).unwrap();
        let level = cluster_level(&parts[0]);
        for version in [Version::Full, Version::Cooked, Version::Streamed] {
            let bytes = file(
                version,
                &[
                    (RecordTag::MESH_COOKED, &cooked),
                    (RecordTag::CLUSTER_LEVEL, &level),
                    (RecordTag::MESH_COOKED, &[]),
                ],
            );
            assert!(check_file(&bytes, &format!("{name} {version:?}")));
        }
    }
    eprintln!("{records} cooked records compared; they exercise {seen:?}");
    // Every flag, codec and prediction the reference implements met at least once
    // (the vendored subset alone meets them all too).
    let flags = (0..8).map(|b| format!("flag {}", 1 << b));
    let codecs = (0..8).map(|c| format!("codec {c}"));
    let others = ["uv_axes", "damping", "remap codec 0", "remap codec 3"].map(String::from);
    for want in flags.chain(codecs).chain(others) {
        assert!(
            seen.contains(&want),
            "no corpus record has {want}: {seen:?}"
        );
    }
}

/// The first `tris` triangles of `m` with the vertices they use, in first-use order.
fn crop(m: &MeshData, tris: usize) -> MeshData {
    let mut out = MeshData::default();
    let mut map = vec![u32::MAX; m.positions.len()];
    for &i in m.indices.iter().take(3 * tris) {
        let i = i as usize;
        if map[i] == u32::MAX {
            map[i] = out.positions.len() as u32;
            out.positions.push(m.positions[i]);
            if !m.normals.is_empty() {
                out.normals.push(m.normals[i]);
            }
            if !m.uvs.is_empty() {
                out.uvs.push(m.uvs[i]);
            }
        }
        out.indices.push(map[i]);
    }
    out
}

/// Which reader a seed goes to.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Cooked,
    Set,
    Full,
    Level,
    File,
}

/// One random damage: bit flips, a byte, a cut, an extreme word, a varint made
/// overlong or a byte inserted or removed, half the time
/// in the first 160 bytes (the headers, where one byte changes the most).
fn mutate(b: &mut Vec<u8>, rng: &mut ChaCha8Rng) {
    if b.is_empty() {
        return;
    }
    let head = b.len().min(160);
    let at = |rng: &mut ChaCha8Rng, len: usize| {
        if rng.random_bool(0.5) {
            rng.random_range(0..head.min(len).max(1))
        } else {
            rng.random_range(0..len)
        }
    };
    match rng.random_range(0..6) {
        0 => {
            for _ in 0..rng.random_range(1..4) {
                let i = at(rng, b.len());
                b[i] ^= 1 << rng.random_range(0..8);
            }
        }
        1 => {
            let i = at(rng, b.len());
            b[i] = [0, 1, 2, 3, 0x7F, 0x80, 0xFF, rng.random()][rng.random_range(0..8)];
        }
        2 => b.truncate(rng.random_range(0..b.len())),
        3 => {
            let i = at(rng, b.len().saturating_sub(4).max(1));
            let v: u32 = [0, 1, 3, 8, u32::MAX, 0x8000_0000, rng.random()][rng.random_range(0..7)];
            let end = (i + 4).min(b.len());
            b[i..end].copy_from_slice(&v.to_le_bytes()[..end - i]);
        }
        4 => {
            // A byte given a continuation bit and a zero after it: a varint
            // there now has an overlong encoding of the same value.
            let i = at(rng, b.len());
            b[i] |= 0x80;
            b.insert(i + 1, 0);
        }
        _ => {
            // A byte inserted or removed: every later offset shifts.
            let i = at(rng, b.len());
            if rng.random_bool(0.5) {
                b.insert(i, rng.random());
            } else {
                b.remove(i);
            }
        }
    }
}

#[test]
fn damaged_records_read_alike_or_are_refused_by_both() {
    // Small seeds of every kind and coding: crops of real meshes and generated ones,
    // each cooked every way.
    let bunny = crop(&load(&farsight_testkit::mesh("bunny.obj"))[0], 150);
    let pirate = crop(&load(&farsight_testkit::mesh("pirate.obj"))[0], 120);
    let fox = crop(&load(&farsight_testkit::mesh("Fox.glb"))[0], 100);
    let meshes = [bunny, pirate, fox, tile::terrain_tile(6, 2.0)];
    let mut seeds: Vec<(Kind, Vec<u8>)> = Vec::new();
    for m in &meshes {
        for opts in variants() {
            seeds.push((Kind::Cooked, cook_mesh(m, &opts).unwrap()));
        }
        seeds.push((Kind::Full, encode_full(m).unwrap()));
        seeds.push((Kind::Level, cluster_level(&crop(m, 60))));
    }
    for opts in variants() {
        let parts = [meshes[0].clone(), meshes[2].clone(), meshes[0].clone()];
        seeds.push((Kind::Set, cook_mesh_set(&parts, &opts).unwrap()));
    }
    let level = cluster_level(&crop(&meshes[1], 20));
    let cooked = cook_mesh(&crop(&meshes[1], 20), &CookConfig::default()).unwrap();
    for version in [Version::Cooked, Version::Streamed] {
        let records = [
            (RecordTag::MESH_COOKED, &cooked[..]),
            (RecordTag::CLUSTER_LEVEL, &level[..]),
        ];
        seeds.push((Kind::File, file(version, &records)));
    }
    for (kind, seed) in &seeds {
        assert!(run(*kind, seed, "seed"), "{kind:?} seed refused");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_F00D);
    let (mut runs, mut accepted) = (0u32, [0u32; 5]);
    for round in 0..40_000 {
        let (kind, seed) = &seeds[round % seeds.len()];
        let mut b = seed.clone();
        for _ in 0..rng.random_range(1..3) {
            mutate(&mut b, &mut rng);
        }
        if matches!(kind, Kind::File) && b.len() >= 20 && rng.random_bool(0.7) {
            // A checksum that fits the damage, to reach the checks behind it.
            let crc = match u32::from_le_bytes(b[12..16].try_into().unwrap()) {
                3 => None,
                _ => Some(crc32fast::hash(&b[20..])),
            };
            if let Some(crc) = crc {
                b[16..20].copy_from_slice(&crc.to_le_bytes());
            }
        }
        let what = format!("round {round}, {kind:?} seed {}", round % seeds.len());
        accepted[*kind as usize] += u32::from(run(*kind, &b, &what));
        runs += 1;
    }
    eprintln!("{runs} damaged inputs; accepted by both per kind {accepted:?}");
    // Damage the readers accept (bytes of a stream, a bound) is compared too.
    assert!(accepted.iter().all(|&a| a > 0), "{accepted:?}");
}

fn run(kind: Kind, bytes: &[u8], what: &str) -> bool {
    match kind {
        Kind::Cooked => check_cooked(bytes, what),
        Kind::Set => check_set(bytes, what),
        Kind::Full => check_full(bytes, what),
        Kind::Level => check_level(bytes, what),
        Kind::File => check_file(bytes, what),
    }
}

/// The range-coded bucket codecs (FORMAT.md 3.3.2) damaged inside their stream
/// bytes (tables, the rANS state and data, the packed bits): both readers accept
/// alike or both refuse, neither panics.
#[test]
fn damaged_range_coded_streams_read_alike_or_are_refused_by_both() {
    // The smallest tile whose record codes a stream with them.
    let (record, ranged) = [16u32, 24, 32, 40, 48, 64]
        .iter()
        .find_map(|&n| {
            let record = cook_mesh(&tile::terrain_tile(n, 2.0), &CookConfig::default()).unwrap();
            let h = CookedMesh::parse(&record).unwrap().header;
            let mut at = std::mem::size_of::<CookedHeader>();
            let mut ranged = Vec::new();
            for s in &h.streams {
                if s.codec == 6 || s.codec == 7 {
                    ranged.push(at..at + s.stored_len as usize);
                }
                at += s.stored_len as usize;
            }
            (!ranged.is_empty()).then_some((record, ranged))
        })
        .expect("a tile of at most 64 x 64 quads codes a stream range-coded");
    assert!(check_cooked(&record, "ranged seed"));
    let mut rng = ChaCha8Rng::seed_from_u64(0x0A11_CE5E);
    let mut accepted = 0;
    for round in 0..3_000 {
        let mut b = record.clone();
        let span = &ranged[round % ranged.len()];
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(span.clone());
            match rng.random_range(0..3) {
                0 => b[i] ^= 1 << rng.random_range(0..8),
                1 => b[i] = [0, 1, 0x7F, 0x80, 0xFF][rng.random_range(0..5)],
                _ => b[i] = rng.random(),
            }
        }
        accepted += u32::from(check_cooked(&b, &format!("ranged round {round}")));
    }
    eprintln!("3000 damaged range-coded streams; {accepted} accepted by both");
}
