//! Full-precision and cooked mesh records: round trips with the stated precision,
//! determinism across thread counts, and attacks on the cooked reader.

use std::collections::HashMap;

use farsight_format::{
    cook_mesh, cook_meshes, encode_full, max_extent, quant::quantize_cells, AlignedBytes,
    Container, CookConfig, CookedHeader, CookedMesh, DecodeScratch, FileWriter, FormatError,
    FullMesh, Manifest, MeshData, RecordIndex, RecordTag, Version,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

fn mesh_path(name: &str) -> String {
    farsight_testkit::mesh(name).display().to_string()
}

use crate::obj;

/// Loads an OBJ as one indexed mesh (all models merged), with per-face provenance.
fn load_obj(name: &str) -> MeshData {
    let mut m = obj::obj_mesh(mesh_path(name)).unwrap_or_else(|e| panic!("test {e}"));
    m.provenance = (0..m.indices.len() as u32 / 3).collect();
    m
}

/// A wavy grid with uvs running to hundreds (metres on a wall) and mixed-handedness
/// tangents supplied by the producer.
fn grid(n: u32, rng: &mut ChaCha8Rng) -> MeshData {
    let mut m = MeshData::default();
    for y in 0..=n {
        for x in 0..=n {
            let (fx, fy) = (x as f32 / n as f32, y as f32 / n as f32);
            m.positions.push([
                fx * 40.0,
                (fx * 7.0).sin() * 2.0 + rng.random_range(-0.1..0.1),
                fy * 30.0,
            ]);
            let nn = [-(fx * 7.0).cos() * 0.35, 1.0, rng.random_range(-0.2..0.2)];
            let l = (nn[0] * nn[0] + nn[1] * nn[1] + nn[2] * nn[2]).sqrt();
            m.normals.push(nn.map(|v| v / l));
            m.uvs.push([fx * 300.0, fy * 200.0]);
            let w = if x < n / 2 { 1.0 } else { -1.0 };
            m.tangents.push([1.0, 0.0, 0.0, w]);
        }
    }
    for y in 0..n {
        for x in 0..n {
            let i = y * (n + 1) + x;
            m.indices
                .extend([i, i + n + 1, i + 1, i + 1, i + n + 1, i + n + 2]);
        }
    }
    m
}

fn angle_deg(a: [f32; 3], b: [f32; 3]) -> f64 {
    let a = a.map(|x| x as f64);
    let b = b.map(|x| x as f64);
    let c = [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ];
    let cross = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    cross
        .atan2(a[0] * b[0] + a[1] * b[1] + a[2] * b[2])
        .to_degrees()
}

fn bounds(p: &[[f32; 3]]) -> ([f32; 3], [f32; 3]) {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for v in p {
        for i in 0..3 {
            lo[i] = lo[i].min(v[i]);
            hi[i] = hi[i].max(v[i]);
        }
    }
    (lo, hi)
}

/// Checks a decoded cooked mesh against its source corner by corner: every decoded
/// triangle must match a source triangle (up to rotation) whose corners are within
/// the stated precision, and the triangle counts must agree.
fn check_cooked(src: &MeshData, out: &MeshData, bits: u32, check_tangent_sign: bool) -> f64 {
    let (lo, hi) = bounds(&src.positions);
    let ext = max_extent(lo, hi) as f64;
    let code = |p: [f32; 3]| -> [u16; 3] {
        std::array::from_fn(|i| quantize_cells(p[i], lo[i], ext, bits))
    };
    let mut by_key: HashMap<[[u16; 3]; 3], Vec<usize>> = HashMap::new();
    for (t, tri) in src.indices.chunks_exact(3).enumerate() {
        let k = [0, 1, 2].map(|c| code(src.positions[tri[c] as usize]));
        // Canonical rotation: smallest code first.
        let r = (0..3).min_by_key(|&r| k[r]).unwrap();
        by_key
            .entry([k[r], k[(r + 1) % 3], k[(r + 2) % 3]])
            .or_default()
            .push(t * 3 + r);
    }
    assert_eq!(
        out.indices.len(),
        src.indices.len(),
        "triangle count changed"
    );
    let mut worst_normal = 0.0f64;
    for tri in out.indices.chunks_exact(3) {
        let k = [0, 1, 2].map(|c| code(out.positions[tri[c] as usize]));
        let r = (0..3).min_by_key(|&r| k[r]).unwrap();
        let key = [k[r], k[(r + 1) % 3], k[(r + 2) % 3]];
        let cands = by_key
            .get(&key)
            .unwrap_or_else(|| panic!("decoded triangle {key:?} matches no source triangle"));
        let mut best = f64::INFINITY;
        for &start in cands {
            let t0 = start - start % 3;
            let mut err = 0.0f64;
            for c in 0..3 {
                let si = src.indices[t0 + (start % 3 + c) % 3] as usize;
                let di = tri[(r + c) % 3] as usize;
                for a in 0..3 {
                    let bound = ext / 2f64.powi(bits as i32 + 1);
                    let e = (out.positions[di][a] as f64 - src.positions[si][a] as f64).abs();
                    assert!(
                        e <= bound * 1.0001 + 1e-6,
                        "position error {e} over {bound}"
                    );
                }
                if !src.normals.is_empty() {
                    err = err.max(angle_deg(out.normals[di], src.normals[si]));
                }
                if check_tangent_sign {
                    assert_eq!(out.tangents[di][3], src.tangents[si][3], "tangent sign");
                }
            }
            best = best.min(err);
        }
        worst_normal = worst_normal.max(best);
    }
    worst_normal
}

#[test]
fn full_precision_round_trip_on_pirate() {
    let m = load_obj("pirate.obj");
    assert!(!m.uvs.is_empty() && !m.normals.is_empty());
    let rec = encode_full(&m).unwrap();
    let a = AlignedBytes::from(&rec[..]);
    let back = FullMesh::parse(&a).unwrap().to_mesh();
    assert_eq!(
        back, m,
        "version 1 stores f32 attributes and indices exactly"
    );
}

#[test]
fn cooked_round_trip_within_precision_and_keeps_tangent_sign() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let m = grid(40, &mut rng);
    let rec = cook_mesh(&m, &CookConfig::default()).unwrap();
    let out = CookedMesh::parse(&rec).unwrap().decode().unwrap();
    let worst = check_cooked(&m, &out, 16, true);
    assert!(
        worst < 0.004,
        "normals within 0.004 degrees at 16 bits, worst {worst}"
    );
    // UVs running to hundreds keep their cell precision (not a half float's).
    let (u_step, v_step) = (300.0 / 65536.0, 200.0 / 65536.0);
    let mut seen = 0;
    for (p, uv) in out.positions.iter().zip(&out.uvs) {
        let src = m
            .positions
            .iter()
            .position(|q| (q[0] - p[0]).abs() < 1e-3 && (q[2] - p[2]).abs() < 1e-3);
        if let Some(s) = src {
            assert!((uv[0] - m.uvs[s][0]).abs() <= u_step / 2.0 + 1e-4);
            assert!((uv[1] - m.uvs[s][1]).abs() <= v_step / 2.0 + 1e-4);
            seen += 1;
        }
    }
    assert!(seen > 100);
}

#[test]
fn cooked_round_trip_on_real_meshes_at_several_bit_depths() {
    for name in ["bunny.obj", "pirate.obj"] {
        let m = load_obj(name);
        for bits in [16, 12] {
            let opts = CookConfig {
                position_bits: bits,
                uv_bits: bits,
                ..Default::default()
            };
            let rec = cook_mesh(&m, &opts).unwrap();
            let cm = CookedMesh::parse(&rec).unwrap();
            assert_eq!(
                cm.header.bounds_min,
                bounds(&m.positions).0,
                "record stores its bounds"
            );
            let out = cm.decode().unwrap();
            let worst = check_cooked(&m, &out, bits, false);
            if !m.normals.is_empty() && bits == 16 {
                assert!(worst < 0.004, "{name}: worst normal error {worst} degrees");
            }
            assert_eq!(
                !out.tangents.is_empty(),
                !m.uvs.is_empty(),
                "{name}: tangents generated iff uvs"
            );
            for t in &out.tangents {
                assert!(t[3] == 1.0 || t[3] == -1.0);
            }
        }
    }
}

#[test]
fn cooking_is_deterministic_across_runs_and_thread_counts() {
    let meshes = vec![
        load_obj("bunny.obj"),
        load_obj("pirate.obj"),
        grid(20, &mut ChaCha8Rng::seed_from_u64(1)),
    ];
    let opts = CookConfig::default();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| cook_meshes(&meshes, &opts))
            .into_iter()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one, run(3));
    assert_eq!(one[0], cook_mesh(&meshes[0], &opts).unwrap());
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Lods {
    levels: Vec<RecordIndex>,
}
impl Manifest for Lods {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        for &l in &self.levels {
            visit(l, RecordTag::MESH_COOKED);
        }
    }
}

#[test]
fn cooked_file_round_trip_and_shared_levels() {
    let m = load_obj("bunny.obj");
    let rec = cook_mesh(&m, &CookConfig::default()).unwrap();
    let mut w = FileWriter::new(Version::Cooked);
    let a = w.add_record(RecordTag::MESH_COOKED, &rec);
    let b = w.add_record(RecordTag::MESH_COOKED, &rec);
    let bytes = w.finish(&Lods { levels: vec![a, b] }).unwrap();
    let bytes = AlignedBytes::from(&bytes[..]);
    let file = Container::<Lods>::read(&bytes).unwrap();
    assert_eq!(file.version(), Version::Cooked);
    assert_eq!(file.raw().record_count(), 1);
    let r = file.record(file.manifest().levels[1]).unwrap();
    let out = CookedMesh::parse(r.bytes).unwrap().decode().unwrap();
    assert_eq!(out.indices.len(), m.indices.len());
}

#[test]
fn cooked_record_prefixes_and_bit_flips_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let m = grid(6, &mut rng);
    let rec = cook_mesh(&m, &CookConfig::default()).unwrap();
    for n in 0..rec.len() {
        assert!(CookedMesh::parse(&rec[..n]).is_err(), "prefix {n} parsed");
    }
    let mut out = MeshData::default();
    let mut scratch = DecodeScratch::default();
    for _ in 0..3000 {
        let mut b = rec.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..b.len());
            b[i] ^= 1 << rng.random_range(0..8);
        }
        if let Ok(cm) = CookedMesh::parse(&b) {
            // Garbage may decode (the container's checksum catches it in a file), but
            // never panics and never names a vertex that does not exist.
            if cm.decode_into(&mut out, &mut scratch).is_ok() {
                assert!(out.indices.iter().all(|&i| i < cm.header.vertex_count));
            }
        }
    }
}

#[test]
fn cooked_reader_refuses_impossible_expansion() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let rec = cook_mesh(&grid(4, &mut rng), &CookConfig::default()).unwrap();
    let mut b = rec.clone();
    // Claim 200 M vertices, keeping the declared stream sizes consistent with it.
    let n: u32 = 200_000_000;
    b[0..4].copy_from_slice(&n.to_le_bytes());
    for (i, per) in [(0usize, 8u32), (1, 4), (2, 4), (3, 4)] {
        // Stream i: codec Meshopt, coded_len = stored_len, decoded_len = n * per.
        let at = 56 + i * 16;
        let stored = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap());
        b[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
        b[at + 8..at + 12].copy_from_slice(&stored.to_le_bytes());
        b[at + 12..at + 16].copy_from_slice(&(n * per).to_le_bytes());
    }
    match CookedMesh::parse(&b) {
        Err(FormatError::ExpansionTooLarge { decoded, .. }) => assert!(decoded >= 800_000_000),
        other => panic!("{other:?}"),
    }
    // An unknown codec and bad bit depths are named.
    let mut b = rec.clone();
    b[56..60].copy_from_slice(&9u32.to_le_bytes());
    assert!(matches!(
        CookedMesh::parse(&b),
        Err(FormatError::BadField { field: "codec", .. })
    ));
    let mut b = rec;
    b[8] = 17;
    assert!(matches!(
        CookedMesh::parse(&b),
        Err(FormatError::BadField {
            field: "position_bits",
            found: 17,
            ..
        })
    ));
}

#[test]
fn full_record_attacks() {
    let m = load_obj("bunny.obj");
    let rec = encode_full(&m).unwrap();
    for n in (0..rec.len()).step_by(97) {
        let a = AlignedBytes::from(&rec[..n]);
        assert!(FullMesh::parse(&a).is_err(), "prefix {n}");
    }
    let mut b = rec.clone();
    let idx_at = 48 + m.positions.len() * 12;
    let idx_at = idx_at.div_ceil(16) * 16;
    b[idx_at..idx_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let a = AlignedBytes::from(&b[..]);
    assert!(matches!(
        FullMesh::parse(&a),
        Err(FormatError::VertexIndexOutOfRange { position: 0, .. })
    ));
    // Writers refuse inconsistent input.
    let mut bad = m.clone();
    bad.indices.push(0);
    assert!(matches!(
        encode_full(&bad),
        Err(FormatError::BadInput { .. })
    ));
    let mut nan = m;
    nan.positions[3][1] = f32::NAN;
    assert!(matches!(
        cook_mesh(&nan, &CookConfig::default()),
        Err(FormatError::NonFinite { .. })
    ));
}

#[test]
fn normal_prediction_is_lossless_and_options_are_kept() {
    let m = load_obj("pirate.obj");
    // One weld for both (each cook keeps the smaller of its welds, which may differ),
    // codings chosen by size alone.
    let exact = CookConfig {
        weld_normal_bits: 0,
        decode_budget: 0.0,
        ..Default::default()
    };
    let with = cook_mesh(&m, &exact).unwrap();
    let without = cook_mesh(
        &m,
        &CookConfig {
            predict_normals: false,
            ..exact
        },
    )
    .unwrap();
    assert!(
        with.len() < without.len(),
        "prediction shrinks the record: {} vs {}",
        with.len(),
        without.len()
    );
    let a = CookedMesh::parse(&with).unwrap().decode().unwrap();
    let b = CookedMesh::parse(&without).unwrap().decode().unwrap();
    assert_eq!(a, b, "predicted normals decode to exactly the same mesh");

    // Tangents at 8 bits decode with their own bit depth, signs kept.
    let t8 = cook_mesh(
        &m,
        &CookConfig {
            tangent_bits: 8,
            ..Default::default()
        },
    )
    .unwrap();
    let c = CookedMesh::parse(&t8).unwrap();
    assert_eq!(c.header.tangent_bits, 8);
    let d = c.decode().unwrap();
    assert_eq!(d.tangents.len(), d.positions.len());
    for t in &d.tangents {
        let l = (t[0] * t[0] + t[1] * t[1] + t[2] * t[2]).sqrt();
        assert!((l - 1.0).abs() < 1e-3 && (t[3] == 1.0 || t[3] == -1.0));
    }

    // A mesh without normals stays without when asked not to invent them.
    let bunny = load_obj("bunny.obj");
    let r = cook_mesh(
        &bunny,
        &CookConfig {
            generate_normals: false,
            ..Default::default()
        },
    )
    .unwrap();
    let out = CookedMesh::parse(&r).unwrap().decode().unwrap();
    assert!(out.normals.is_empty() && out.tangents.is_empty());
    assert_eq!(out.indices.len(), bunny.indices.len());
}

/// Smooth normals that are not the surface's own (here analytic, of a flat grid)
/// are predicted by the parallelogram walk over their octahedral codes: losslessly,
/// smaller than stored as they are and than against the geometric prediction.
#[test]
fn smooth_normals_off_the_surface_are_predicted_by_the_walk() {
    let mut m = MeshData::default();
    let n = 24u32;
    for y in 0..=n {
        for x in 0..=n {
            let (fx, fy) = (x as f32 / n as f32, y as f32 / n as f32);
            m.positions.push([fx, 0.0, fy]);
            let d = [-0.4 * (fx * 6.0).cos(), 1.0, 0.3 * (fy * 4.0).sin()];
            let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            m.normals.push(d.map(|c| c / l));
            m.uvs.push([fx, fy]);
        }
    }
    for y in 0..n {
        for x in 0..n {
            let i = y * (n + 1) + x;
            m.indices
                .extend([i, i + n + 1, i + 1, i + 1, i + n + 1, i + n + 2]);
        }
    }
    let opts = CookConfig {
        generate_tangents: false,
        ..CookConfig::default()
    };
    let with = cook_mesh(&m, &opts).unwrap();
    let cooked = CookedMesh::parse(&with).unwrap();
    let h = cooked.header;
    assert_ne!(
        h.flags & CookedHeader::PARALLELOGRAM_NORMALS,
        0,
        "{:#x}",
        h.flags
    );
    assert_eq!(h.flags & CookedHeader::PREDICTED_NORMALS, 0);
    let without = cook_mesh(
        &m,
        &CookConfig {
            predict_normals: false,
            ..opts
        },
    )
    .unwrap();
    let w = CookedMesh::parse(&without).unwrap();
    assert!(
        h.streams[1].stored_len < w.header.streams[1].stored_len,
        "normals {} against {} stored as they are",
        h.streams[1].stored_len,
        w.header.streams[1].stored_len
    );
    assert_eq!(cooked.decode().unwrap(), w.decode().unwrap());
    // A reader refuses both normal predictions at once, and the walk's without
    // normals.
    let mut bad = with.clone();
    let at = std::mem::offset_of!(CookedHeader, flags);
    bad[at] |= CookedHeader::PREDICTED_NORMALS;
    assert!(CookedMesh::parse(&bad).is_err());
    bad[at] &= !(CookedHeader::PREDICTED_NORMALS | CookedHeader::HAS_NORMALS);
    assert!(CookedMesh::parse(&bad).is_err());
}

/// A terrain of `n` x `n` quads, each with its own four vertices (uvs 0..1 per
/// quad, as exporters write tiled uvs), normals of the smooth height field.
fn split_quads(n: u32) -> MeshData {
    let mut m = MeshData::default();
    let height = |x: f32, z: f32| 0.3 * (x * 0.7).sin() * (z * 0.5).cos();
    for qz in 0..n {
        for qx in 0..n {
            let base = m.positions.len() as u32;
            for (dx, dz) in [(0, 0), (1, 0), (1, 1), (0, 1)] {
                let (x, z) = ((qx + dx) as f32, (qz + dz) as f32);
                m.positions.push([x, height(x, z), z]);
                let d = [-0.2 * (x * 0.7).cos(), 1.0, 0.15 * (z * 0.5).sin()];
                let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                m.normals.push(d.map(|c| c / l));
                m.uvs.push([dx as f32, dz as f32]);
            }
            m.indices
                .extend([base, base + 3, base + 1, base + 1, base + 3, base + 2]);
        }
    }
    m
}

/// Vertices repeating a position (each quad its own four) store the distinct
/// positions once and a remap: every corner decodes to its source's position, every
/// instruction-set tier alike, and a corrupt remap or count is an error.
#[test]
fn vertices_sharing_positions_store_each_once() {
    let n = 20;
    let m = split_quads(n);
    let opts = CookConfig {
        generate_tangents: false,
        ..CookConfig::default()
    };
    let rec = cook_mesh(&m, &opts).unwrap();
    let c = CookedMesh::parse(&rec).unwrap();
    let h = c.header;
    assert_ne!(
        h.flags & CookedHeader::SHARED_POSITIONS,
        0,
        "{:#x}",
        h.flags
    );
    assert_eq!(h.vertex_count, 4 * n * n);
    assert_eq!(h.position_count, (n + 1) * (n + 1));
    assert_eq!(h.remap_codec, 3, "byte planes through zstd");
    let out = c.decode().unwrap();
    assert_eq!(out.indices.len(), m.indices.len());
    // Cells of the grid are whole numbers: a decoded corner rounds to its source's
    // grid point, and its height is within half a 16-bit step.
    let step = max_extent([0.0, -0.3, 0.0], [n as f32, 0.3, n as f32]) / 65535.0;
    let mut seen = HashMap::new();
    for p in &out.positions {
        let key = [p[0].round() as i32, p[2].round() as i32];
        let want = 0.3 * (key[0] as f32 * 0.7).sin() * (key[1] as f32 * 0.5).cos();
        assert!((p[1] - want).abs() <= step, "{p:?} against {want}");
        *seen.entry(key).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), ((n + 1) * (n + 1)) as usize);
    // Headers a reader refuses: more positions than vertices, an unknown remap
    // codec, a remap length past the record.
    let pc = std::mem::offset_of!(CookedHeader, position_count);
    let rc = std::mem::offset_of!(CookedHeader, remap_codec);
    let rl = std::mem::offset_of!(CookedHeader, remap_len);
    for (off, bytes) in [
        (pc, (h.vertex_count + 1).to_le_bytes().to_vec()),
        (rc, vec![7]),
        (rl, (h.remap_len + 1).to_le_bytes().to_vec()),
    ] {
        let mut bad = rec.clone();
        bad[off..off + bytes.len()].copy_from_slice(&bytes);
        assert!(CookedMesh::parse(&bad).is_err(), "offset {off}");
    }
    // A remap that fails (its frame or its values): an error, not a panic.
    let mut failed = 0;
    for k in 1..=h.remap_len as usize {
        let mut bad = rec.clone();
        let at = bad.len() - k;
        bad[at] ^= 0x5a;
        let c = CookedMesh::parse(&bad).unwrap();
        failed += usize::from(c.decode().is_err());
    }
    assert!(failed > 0);
}

/// A flat-shaded terrain (every triangle its own three vertices, with its face's
/// normal, as low-poly exports are): positions shared, and the geometric prediction,
/// summed by the uv walk once they are restored, decodes every normal exactly as
/// stored without prediction.
#[test]
fn shared_positions_keep_the_geometric_normal_prediction_exact() {
    let quads = split_quads(24);
    let mut m = MeshData::default();
    for t in quads.indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| quads.positions[i as usize]);
        let (e1, e2) = (
            [b[0] - a[0], b[1] - a[1], b[2] - a[2]],
            [c[0] - a[0], c[1] - a[1], c[2] - a[2]],
        );
        let f = [
            e1[1] * e2[2] - e1[2] * e2[1],
            e1[2] * e2[0] - e1[0] * e2[2],
            e1[0] * e2[1] - e1[1] * e2[0],
        ];
        let l = (f[0] * f[0] + f[1] * f[1] + f[2] * f[2]).sqrt();
        for &i in t {
            m.indices.push(m.positions.len() as u32);
            m.positions.push(quads.positions[i as usize]);
            m.normals.push(f.map(|c| c / l));
            m.uvs.push(quads.uvs[i as usize]);
        }
    }
    let opts = CookConfig {
        generate_tangents: false,
        ..CookConfig::default()
    };
    let rec = cook_mesh(&m, &opts).unwrap();
    let c = CookedMesh::parse(&rec).unwrap();
    let f = c.header.flags;
    let want = CookedHeader::SHARED_POSITIONS | CookedHeader::PREDICTED_NORMALS;
    assert_eq!(f & want, want, "{f:#x}");
    let out = c.decode().unwrap();
    let plain = cook_mesh(
        &m,
        &CookConfig {
            predict_normals: false,
            ..opts
        },
    )
    .unwrap();
    let plain = CookedMesh::parse(&plain).unwrap().decode().unwrap();
    // The same normals as stored without prediction, vertex for vertex.
    assert_eq!(out.normals, plain.normals);
    assert_eq!(out.positions, plain.positions);
}

/// A grid of 800 triangles with every corner its own vertex, as exporters of custom
/// normals write them: each corner's normal the smooth one plus noise in its last
/// bits, and a crease down the middle (a 90 degree fold with two normals per
/// vertex on it). The default weld (normals equal at 8 bits) gives each position
/// one vertex, two on the crease; an exact weld keeps the noisy corners apart;
/// either way the decoded normals are the source's within the weld's step.
#[test]
fn corners_whose_normals_differ_in_their_last_bits_weld_and_a_crease_stays() {
    let n = 20usize;
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut m = MeshData::default();
    // The fold: x in 0..=n/2 lies flat (normal +y), the rest rises as a wall
    // (normal -x) from the crease at x = n/2.
    let point = |x: usize, z: usize| -> ([f32; 3], [f32; 3]) {
        let h = n / 2;
        if x <= h {
            ([x as f32, 0.0, z as f32], [0.0, 1.0, 0.0])
        } else {
            ([h as f32, (x - h) as f32, z as f32], [-1.0, 0.0, 0.0])
        }
    };
    for z in 0..n {
        for x in 0..n {
            let quad = [(x, z), (x + 1, z), (x + 1, z + 1), (x, z + 1)];
            for tri in [[0, 1, 2], [0, 2, 3]] {
                // A triangle of the wall takes the wall's normal at the crease.
                let wall = quad.iter().any(|&(qx, _)| qx > n / 2) && x >= n / 2;
                for k in tri {
                    let (qx, qz) = quad[k];
                    let (p, mut nn) = point(qx, qz);
                    if wall {
                        nn = [-1.0, 0.0, 0.0];
                    }
                    let noise: [f32; 3] = std::array::from_fn(|_| rng.random_range(-2e-4..2e-4));
                    m.indices.push(m.positions.len() as u32);
                    m.positions.push(p);
                    m.normals
                        .push([nn[0] + noise[0], nn[1] + noise[1], nn[2] + noise[2]]);
                    m.uvs.push([qx as f32 / n as f32, qz as f32 / n as f32]);
                }
            }
        }
    }
    m.provenance = (0..m.indices.len() as u32 / 3).collect();
    let cook = |weld| {
        let opts = CookConfig {
            weld_normal_bits: weld,
            generate_tangents: false,
            ..CookConfig::default()
        };
        let rec = cook_mesh(&m, &opts).unwrap();
        let cm = CookedMesh::parse(&rec).unwrap();
        (cm.header.vertex_count as usize, cm.decode().unwrap())
    };
    let (welded, out) = cook(8);
    let positions = (n + 1) * (n + 1);
    // One vertex per position, a second on each of the crease's n + 1 points.
    assert_eq!(welded, positions + n + 1);
    let (exact, _) = cook(0);
    assert!(
        exact > 2 * welded,
        "an exact weld keeps noisy corners: {exact}"
    );
    // Every source corner's normal is drawn at its position within the 8-bit step
    // (the grid's points are whole numbers, so a decoded position rounds to its
    // source's).
    let key = |p: [f32; 3]| p.map(|c| c.round() as i32);
    let mut drawn: HashMap<[i32; 3], Vec<[f32; 3]>> = HashMap::new();
    for (p, nn) in out.positions.iter().zip(&out.normals) {
        drawn.entry(key(*p)).or_default().push(*nn);
    }
    let mut worst = 0.0f64;
    for (p, want) in m.positions.iter().zip(&m.normals) {
        let best = drawn[&key(*p)]
            .iter()
            .map(|&got| angle_deg(got, *want))
            .fold(f64::MAX, f64::min);
        worst = worst.max(best);
    }
    assert!(worst < 0.7, "a welded normal moved {worst} degrees");
    assert!(
        matches!(
            cook_mesh(
                &m,
                &CookConfig {
                    weld_normal_bits: 1,
                    ..CookConfig::default()
                }
            ),
            Err(FormatError::BadInput { .. })
        ),
        "1 bit is refused"
    );
}
