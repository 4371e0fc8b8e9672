//! Cooked mesh sets: identical parts stored once, round trips against the parts'
//! own records, determinism across thread counts, and attacks on the set reader.

use farsight_format::{
    compact_record, cook_mesh, cook_mesh_set, CookConfig, CookedMesh, CookedSet, DecodeScratch,
    FormatError, MeshData, SetCodec, SET_VERSION,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A bumpy `w` x `h` quad patch offset by `at`, with normals and uvs.
fn patch(w: u32, h: u32, at: [f32; 3]) -> MeshData {
    let mut m = MeshData::default();
    for y in 0..=h {
        for x in 0..=w {
            let (fx, fy) = (x as f32 / w as f32, y as f32 / h as f32);
            let z = 0.1 * (fx * 5.0 + at[0]).sin() * (fy * 3.0).cos();
            m.positions.push([at[0] + fx, at[1] + z, at[2] + fy]);
            let n = [-0.3 * (fx * 5.0).cos(), 1.0, 0.2 * fy];
            let l = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            m.normals.push(n.map(|c| c / l));
            m.uvs.push([fx * 2.0, fy]);
        }
    }
    for y in 0..h {
        for x in 0..w {
            let i = y * (w + 1) + x;
            m.indices
                .extend([i, i + w + 1, i + 1, i + 1, i + w + 1, i + w + 2]);
        }
    }
    m
}

/// Three distinct parts, the first used three times, a tiny one twice.
fn parts() -> Vec<MeshData> {
    let a = patch(6, 5, [0.0; 3]);
    let b = patch(9, 3, [2.0, 0.0, 0.0]);
    let tiny = patch(1, 1, [0.0, 1.0, 0.0]);
    vec![a.clone(), b, a.clone(), tiny.clone(), a, tiny]
}

/// Cooked apart: no part merged with another.
fn apart() -> CookConfig {
    CookConfig {
        merge_parts: false,
        ..CookConfig::default()
    }
}

#[test]
fn identical_parts_are_stored_once_and_decode_like_their_own_records() {
    let parts = parts();
    let opts = apart();
    let set = cook_mesh_set(&parts, &opts).unwrap();
    let s = CookedSet::parse(&set).unwrap();
    assert_eq!(s.part_count(), 6);
    assert_eq!(s.record_count(), 3);
    let table: Vec<usize> = s.part_records().collect();
    assert_eq!(table, [0, 1, 0, 2, 0, 2]);
    let decoded = s.decode().unwrap();
    assert_eq!(decoded.len(), 3);
    // Each record decodes to what the part's own record decodes to, and is the
    // part's one slot.
    for (p, (&r, part)) in table.iter().zip(&parts).enumerate() {
        let own = cook_mesh(part, &opts).unwrap();
        let own = CookedMesh::parse(&own).unwrap().decode().unwrap();
        assert_eq!(decoded[r], own);
        let span = s.part_span(p).unwrap();
        assert_eq!((span.record, span.first_triangle), (r, 0));
        assert_eq!(span.triangle_count as usize, part.triangle_count());
    }
    assert_eq!(s.part_span(6), None);
    // Smaller than the parts' records side by side, and than the distinct ones.
    let distinct: usize = [0, 1, 3]
        .iter()
        .map(|&i| cook_mesh(&parts[i], &opts).unwrap().len())
        .sum();
    assert!(set.len() < distinct, "{} >= {distinct}", set.len());
}

/// Largest distance from a decoded position of a part to the nearest of its
/// source's, and back (the cook reorders triangles and vertices).
fn worst_position_error(src: &MeshData, got: &MeshData) -> f32 {
    assert_eq!(src.indices.len(), got.indices.len());
    let near = |p: [f32; 3], set: &[[f32; 3]]| {
        set.iter()
            .map(|q| (0..3).map(|k| (p[k] - q[k]).abs()).fold(0.0, f32::max))
            .fold(f32::MAX, f32::min)
    };
    let one = |a: &MeshData, b: &MeshData| {
        a.positions
            .iter()
            .map(|&p| near(p, &b.positions))
            .fold(0.0, f32::max)
    };
    one(src, got).max(one(got, src))
}

#[test]
fn parts_cooked_together_share_one_record_and_keep_their_ranges() {
    // Many small distinct parts of one layout, one of them twice, and one part
    // without uvs (another layout, so another record).
    let mut parts: Vec<MeshData> = (0..12)
        .map(|i| patch(2 + i % 4, 1 + i % 3, [i as f32 * 1.5, 0.0, 0.0]))
        .collect();
    parts.push(parts[3].clone());
    let mut bare = patch(3, 3, [0.0, 2.0, 0.0]);
    bare.uvs.clear();
    parts.push(bare);
    let opts = CookConfig::default();
    let set = cook_mesh_set(&parts, &opts).unwrap();
    let s = CookedSet::parse(&set).unwrap();
    assert_eq!((s.part_count(), s.record_count()), (14, 2));
    assert_eq!(s.header.slot_count, 13);
    assert!(set.len() < cook_mesh_set(&parts, &apart()).unwrap().len());
    // The parts' triangles are ranges of their record, in part order.
    let spans: Vec<_> = s.spans().collect();
    assert_eq!(spans.len(), 13);
    let mut next = [0u32; 2];
    for span in &spans {
        assert_eq!(span.first_triangle, next[span.record]);
        next[span.record] += span.triangle_count;
    }
    assert_eq!(s.part_span(12), s.part_span(3));
    let records = s.decode().unwrap();
    assert_eq!(next[0] as usize, records[0].triangle_count());
    // Every part decodes with its own triangles, within half a step of the grid over
    // all the parts of its record (16 bits over their largest extent, 19.5 units).
    let decoded = s.decode_parts().unwrap();
    for (src, got) in parts.iter().zip(&decoded) {
        assert_eq!(got.uvs.is_empty(), src.uvs.is_empty());
        let e = worst_position_error(src, got);
        assert!(e <= 0.5 * 19.5 / 65535.0 * 1.01, "error {e}");
    }
    // Apart, each part keeps its own, finer grid.
    let apart_set = cook_mesh_set(&parts, &apart()).unwrap();
    let apart_parts = CookedSet::parse(&apart_set)
        .unwrap()
        .decode_parts()
        .unwrap();
    for (src, got) in parts.iter().zip(&apart_parts) {
        assert!(worst_position_error(src, got) <= 0.5 * 5.0 / 65535.0 * 1.01);
    }
}

#[test]
fn parts_sharing_vertices_store_them_once_when_cooked_together() {
    // Two primitives drawing halves of one vertex buffer (as glTF primitives share
    // buffers): cooked together, the shared vertices are stored once.
    let whole = patch(6, 6, [0.0; 3]);
    let half = whole.indices.len() / 2;
    let mut a = whole.clone();
    a.indices.truncate(half);
    let mut b = whole.clone();
    b.indices.drain(..half);
    let set = cook_mesh_set(&[a.clone(), b.clone()], &CookConfig::default()).unwrap();
    let s = CookedSet::parse(&set).unwrap();
    assert_eq!(s.record_count(), 1);
    let m = s.decode().unwrap().remove(0);
    assert_eq!(m.positions.len(), whole.positions.len());
    let parts = s.decode_parts().unwrap();
    assert_eq!(parts[0].indices.len(), a.indices.len());
    assert_eq!(parts[1].indices.len(), b.indices.len());
}

#[test]
fn one_geometry_placed_many_times_costs_a_run_of_the_part_table() {
    let a = patch(4, 4, [0.0; 3]);
    let b = patch(2, 3, [1.0, 0.0, 0.0]);
    let mut parts = vec![a.clone(); 40];
    parts.extend(vec![b; 10]);
    let set = cook_mesh_set(&parts, &CookConfig::default()).unwrap();
    let s = CookedSet::parse(&set).unwrap();
    assert_eq!(s.header.part_width, 0, "runs");
    assert_eq!(s.part_count(), 50);
    for p in 0..50 {
        assert_eq!(s.part_slot(p), Some(usize::from(p >= 40)));
    }
    assert_eq!(s.part_slot(50), None);
    let decoded = s.decode_parts().unwrap();
    assert_eq!(decoded[39].indices.len(), a.indices.len());
    // The runs follow the header: a count of 2, then (slot, length) pairs.
    let at = part_table_at(&s.header);
    assert_eq!(set[at..at + 5], [2, 0, 40, 1, 10]);
    for (k, v, field) in [
        (2, 41, "part runs"),
        (2, 0, "part run"),
        (1, 5, "part slot"),
    ] {
        let mut b = set.clone();
        b[at + k] = v;
        assert!(
            matches!(CookedSet::parse(&b), Err(FormatError::BadField { field: f, .. }) if f == field),
            "{field}"
        );
    }
}

#[test]
fn small_parts_share_one_frame() {
    // Many small distinct parts: one zstd frame over them beats a frame per stream.
    let parts: Vec<MeshData> = (0..20)
        .map(|i| patch(1 + i % 3, 1 + i % 2, [i as f32, 0.0, 0.0]))
        .collect();
    let opts = apart();
    let set = cook_mesh_set(&parts, &opts).unwrap();
    let s = CookedSet::parse(&set).unwrap();
    assert_eq!(s.header.body_codec, SetCodec::Zstd as u32);
    let per_part: usize = parts
        .iter()
        .map(|p| cook_mesh(p, &opts).unwrap().len())
        .sum();
    assert!(2 * set.len() < per_part, "{} against {per_part}", set.len());
    let decoded = s.decode_parts().unwrap();
    for (p, d) in parts.iter().zip(&decoded) {
        assert_eq!(p.indices.len(), d.indices.len());
    }
}

#[test]
fn set_bytes_do_not_depend_on_the_thread_count() {
    let parts = parts();
    let opts = CookConfig::default();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| cook_mesh_set(&parts, &opts).unwrap());
    let four = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap()
        .install(|| cook_mesh_set(&parts, &opts).unwrap());
    assert_eq!(one, four);
}

#[test]
fn an_empty_set_round_trips() {
    let set = cook_mesh_set(&[], &CookConfig::default()).unwrap();
    let s = CookedSet::parse(&set).unwrap();
    assert_eq!((s.part_count(), s.record_count()), (0, 0));
    assert!(s.decode().unwrap().is_empty());
}

/// Where the part table starts: after the header's four bytes and five varints.
fn part_table_at(h: &farsight_format::CookedSetHeader) -> usize {
    let mut head = Vec::new();
    for v in [
        h.part_count,
        h.record_count,
        h.slot_count,
        h.body_stored_len,
        h.body_len,
    ] {
        varint(v, &mut head);
    }
    4 + head.len()
}

fn varint(mut v: u32, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[test]
fn set_reader_refuses_unknown_versions_and_impossible_sizes() {
    let set = cook_mesh_set(&parts(), &apart()).unwrap();
    let h = CookedSet::parse(&set).unwrap().header;
    assert_eq!(
        (h.version, h.part_width, h.length_width),
        (SET_VERSION, 1, 2)
    );
    // Versions 1 (the 32-byte header) and 2 (no slots), and an unknown one.
    for v in [1u8, 2, SET_VERSION as u8 + 1] {
        let mut b = set.clone();
        b[0] = v;
        assert!(matches!(
            CookedSet::parse(&b),
            Err(FormatError::WrongVersion { found, .. }) if found == v as u32
        ));
    }
    // Entry widths no writer uses, and an unknown body codec.
    for (at, v, field) in [
        (1, 3u8, "part entry width"),
        (2, 1, "length entry width"),
        (3, 2, "body_codec"),
    ] {
        let mut b = set.clone();
        b[at] = v;
        assert!(
            matches!(CookedSet::parse(&b), Err(FormatError::BadField { field: f, .. }) if f == field),
            "{field}"
        );
    }
    // A part naming a slot the set does not have: the part table follows the
    // header's four bytes and five varints.
    let mut b = set.clone();
    b[part_table_at(&h)] = 7;
    assert!(matches!(
        CookedSet::parse(&b),
        Err(FormatError::BadField {
            field: "part slot",
            found: 7,
            ..
        })
    ));
    // The slot table follows the part table: a record of no slots, and a slot
    // whose triangles are not its record's (found when the record is read).
    let slots_at = part_table_at(&h) + h.part_count as usize;
    assert_eq!(set[slots_at], 1, "one slot in the first record");
    let mut b = set.clone();
    b[slots_at] = 0;
    assert!(matches!(
        CookedSet::parse(&b),
        Err(FormatError::BadField { field: "slots", .. })
    ));
    let mut b = set.clone();
    b[slots_at + 1] ^= 1;
    let s = CookedSet::parse(&b).unwrap();
    assert!(matches!(
        s.decode(),
        Err(FormatError::BadField {
            field: "slot triangles",
            ..
        })
    ));
    let mut buf = Vec::new();
    let body = s
        .body(&mut buf, &mut DecodeScratch::default())
        .unwrap()
        .to_vec();
    assert!(s.record(&body, 0).is_err());
    // A zstd body of one stored byte claiming 4 GiB.
    let mut b = vec![SET_VERSION as u8, 1, 2, SetCodec::Zstd as u8];
    for v in [1, 1, 1, 1, u32::MAX] {
        varint(v, &mut b);
    }
    b.extend_from_slice(&[0, 1, 1, 0xff, 0xff, 0]);
    assert!(matches!(
        CookedSet::parse(&b),
        Err(FormatError::ExpansionTooLarge { .. })
    ));
    // An overlong varint (a count of 1 in two bytes) and one past u32.
    let mut b = vec![SET_VERSION as u8, 1, 2, 0, 0x81, 0x00];
    assert!(matches!(
        CookedSet::parse(&b),
        Err(FormatError::BadField {
            field: "part_count",
            ..
        })
    ));
    b.truncate(4);
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x7f]);
    assert!(matches!(
        CookedSet::parse(&b),
        Err(FormatError::BadField {
            field: "part_count",
            ..
        })
    ));
}

/// The compact record form inside sets reads back to the record cook_mesh writes:
/// the same header and streams, for every option the cooker has.
#[test]
fn compact_records_read_back_to_the_full_records() {
    let mut bare = patch(3, 3, [0.0; 3]);
    bare.uvs.clear();
    let mut no_normals = bare.clone();
    no_normals.normals.clear();
    for m in [patch(5, 4, [0.0; 3]), bare, no_normals] {
        for entropy in [true, false] {
            let opts = CookConfig {
                entropy,
                ..CookConfig::default()
            };
            let full = cook_mesh(&m, &opts).unwrap();
            let compact = compact_record(&full).unwrap().expect("compact form");
            assert!(
                compact.len() + 60 < full.len(),
                "{} against {}",
                compact.len(),
                full.len()
            );
            let (a, b) = (
                CookedMesh::parse(&full).unwrap(),
                CookedMesh::parse_compact(&compact).unwrap(),
            );
            assert_eq!(a.header, b.header);
            assert_eq!(a.streams, b.streams);
            for n in 0..compact.len() {
                assert!(
                    CookedMesh::parse_compact(&compact[..n]).is_err(),
                    "prefix {n}"
                );
            }
        }
    }
}

#[test]
fn set_prefixes_and_bit_flips_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let small: Vec<MeshData> = (0..6).map(|i| patch(2, 2, [i as f32, 0.0, 0.0])).collect();
    for parts in [parts(), small] {
        for (entropy, merge_parts) in [(true, true), (false, true), (true, false)] {
            let opts = CookConfig {
                entropy,
                merge_parts,
                ..CookConfig::default()
            };
            let set = cook_mesh_set(&parts, &opts).unwrap();
            for n in 0..set.len() {
                assert!(CookedSet::parse(&set[..n]).is_err(), "prefix {n} parsed");
            }
            let mut out = Vec::new();
            let mut scratch = DecodeScratch::default();
            for _ in 0..1500 {
                let mut b = set.clone();
                for _ in 0..rng.random_range(1..4) {
                    let i = rng.random_range(0..b.len());
                    b[i] ^= 1 << rng.random_range(0..8);
                }
                if let Ok(s) = CookedSet::parse(&b) {
                    if s.decode_into(&mut out, &mut scratch).is_ok() {
                        assert_eq!(out.len(), s.record_count());
                        for m in &out {
                            let n = m.positions.len() as u32;
                            assert!(m.indices.iter().all(|&i| i < n));
                        }
                        // Every part's range lies inside its record.
                        for span in s.spans() {
                            let m = &out[span.record];
                            let end = span.first_triangle as usize + span.triangle_count as usize;
                            assert!(end <= m.triangle_count());
                        }
                        assert_eq!(s.decode_parts().unwrap().len(), s.part_count());
                    } else {
                        assert!(out.is_empty());
                    }
                }
            }
        }
    }
}

use crate::obj;

/// A real mesh of the shared corpus (positions, normals, uvs).
fn real(name: &str) -> MeshData {
    let path = farsight_testkit::mesh(name);
    obj::obj_mesh(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The set's estimated decode time over its distinct records, ns.
fn estimated_ns(set: &[u8]) -> f64 {
    let s = CookedSet::parse(set).unwrap();
    let mut buf = Vec::new();
    let body = s.body(&mut buf, &mut DecodeScratch::default()).unwrap();
    (0..s.record_count())
        .map(|r| s.record(body, r).unwrap().estimated_decode_ns())
        .sum()
}

fn decoded(set: &[u8]) -> Vec<MeshData> {
    CookedSet::parse(set).unwrap().decode_parts().unwrap()
}

#[test]
fn a_decode_budget_trades_at_most_the_growth_allowed_for_decode_time() {
    // A real mesh and a set of patches, each cooked by size alone (no budget), under
    // a budget no coding meets (every trade within the growth is taken) and under
    // one every coding meets (nothing traded).
    let meshes = [vec![real("pirate.obj")], parts()];
    for (i, parts) in meshes.iter().enumerate() {
        let by_size = CookConfig {
            decode_budget: 0.0,
            ..CookConfig::default()
        };
        let smallest = cook_mesh_set(parts, &by_size).unwrap();
        let roomy = CookConfig {
            decode_budget: 1e9,
            ..by_size
        };
        assert_eq!(cook_mesh_set(parts, &roomy).unwrap(), smallest, "set {i}");
        for growth in [0.0, 1.0 / 16.0, 0.25] {
            let tight = CookConfig {
                decode_budget: 0.01,
                speed_growth: growth,
                ..by_size
            };
            let fast = cook_mesh_set(parts, &tight).unwrap();
            let what = format!("set {i}, growth {growth}");
            // Each record grows by at most the growth over its smallest coding and
            // the set's body by at most the growth over its smallest candidate: at
            // most twice over the smallest set, plus the table of a record more.
            let limit = smallest.len() as f64 * (1.0 + growth) * (1.0 + growth) + 64.0;
            assert!(
                fast.len() as f64 <= limit,
                "{what}: {} > {limit}",
                fast.len()
            );
            assert!(
                estimated_ns(&fast) <= estimated_ns(&smallest),
                "{what}: a trade made the estimate slower"
            );
            // Codings differ, the decoded values do not.
            let (a, b) = (decoded(&smallest), decoded(&fast));
            assert_eq!(a.len(), b.len(), "{what}");
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x.indices, y.indices, "{what}");
                assert_eq!(x.positions, y.positions, "{what}");
                assert_eq!(x.normals, y.normals, "{what}");
                assert_eq!(x.tangents, y.tangents, "{what}");
                assert_eq!(x.uvs, y.uvs, "{what}");
            }
        }
    }
}

#[test]
fn a_tight_budget_moves_a_slow_record_to_faster_codings() {
    // pirate's smallest coding entropy codes every stream; with no room in the
    // budget and a quarter more bytes allowed, some stream must give its entropy
    // layer up, and the estimate falls.
    let parts = vec![real("pirate.obj")];
    let by_size = CookConfig {
        decode_budget: 0.0,
        ..CookConfig::default()
    };
    let smallest = cook_mesh_set(&parts, &by_size).unwrap();
    let fast = cook_mesh_set(
        &parts,
        &CookConfig {
            decode_budget: 0.01,
            speed_growth: 0.25,
            ..by_size
        },
    )
    .unwrap();
    assert!(fast.len() > smallest.len());
    assert!(estimated_ns(&fast) < 0.9 * estimated_ns(&smallest));
}
