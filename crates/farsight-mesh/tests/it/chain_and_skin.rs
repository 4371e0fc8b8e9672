//! Discrete LOD chains (docs/design/visibility-pass.md#generated-lod-chains) on the real
//! meshes, and Fox.glb's skin.

use crate::common;

use farsight_format::{AlignedBytes, CookConfig, RecordTag, Version};
use farsight_lod::{screen_space_error_px, ProjectionInfo};
use farsight_mesh::{
    decode_lod_entry, decode_lod_submesh, encode_lod_chain, encode_lod_chain_as,
    generate_lod_chain, import_prepared, load_skinned_meshes, read_lod_chain, ChainRecords,
    LodChainConfig, SubMesh,
};
use glam::{Mat4, Quat, Vec3};
use rand::{Rng, SeedableRng};

#[test]
fn chains_halve_then_quarter_and_hand_over_at_one_pixel() {
    for m in common::REAL {
        let (prepared, _) = import_prepared(&common::mesh_path(m)).unwrap();
        let chain = generate_lod_chain(&prepared.mesh, &LodChainConfig::default());
        let levels = &chain.levels;
        assert!(levels.len() >= 3, "{m}: {} levels", levels.len());
        for (i, l) in levels.iter().enumerate() {
            assert_eq!(l.name, format!("{}:lod{i}", prepared.mesh.name));
        }
        let t: Vec<f32> = levels
            .iter()
            .map(|l| l.mesh.triangle_count() as f32)
            .collect();
        assert!(
            (0.4..=0.6).contains(&(t[1] / t[0])),
            "{m}: level 1 keeps {}",
            t[1] / t[0]
        );
        for i in 2..t.len() {
            // A quarter of the previous target; the simplifier may stop short.
            assert!(
                t[i] / t[i - 1] <= 0.5,
                "{m}: level {i} keeps {}",
                t[i] / t[i - 1]
            );
        }
        // Hand-over: the next level's error covers one pixel of 1080 lines at 60 degrees.
        let p = ProjectionInfo::perspective(60f32.to_radians());
        for i in 0..levels.len() - 1 {
            let px = screen_space_error_px(levels[i + 1].error, levels[i].max_distance, p, 1080.0);
            assert!(
                (px - 1.0).abs() < 1e-3,
                "{m}: level {i} hands over at {px} px"
            );
        }
        let n = levels.len();
        assert!(
            (levels[n - 1].max_distance - 2.0 * levels[n - 2].max_distance).abs()
                < 1e-3 * levels[n - 1].max_distance
        );
        // Plugs into the foundation's LOD component.
        let lod = chain.lod_levels().unwrap();
        assert_eq!(lod.len(), n);
        // Written and read back.
        let bytes = encode_lod_chain(&prepared.mesh.name, &chain).unwrap();
        let aligned = AlignedBytes::from(&bytes[..]);
        let file = read_lod_chain(&aligned).unwrap();
        for (entry, level) in file.manifest().levels.iter().zip(levels) {
            assert_eq!(entry.triangles as usize, level.mesh.triangle_count());
            for (s, sub) in entry.submeshes.iter().zip(&level.mesh.submeshes) {
                let back =
                    decode_lod_submesh(file.record(s.record).unwrap().bytes, &s.material).unwrap();
                assert_eq!(back.indices, sub.indices);
                assert_eq!(back.vertices, sub.vertices);
            }
        }
        // Truncated records give errors, not panics.
        let rec = file
            .record(file.manifest().levels[1].submeshes[0].record)
            .unwrap()
            .bytes;
        for cut in [0, 8, 17, rec.len() - 1] {
            assert!(decode_lod_submesh(&rec[..cut], "m").is_err());
        }
    }
}

/// Area, area-weighted centroid, and box of a sub-mesh: what a cooked copy, whose
/// vertices are welded and reordered, must reproduce within its precision.
fn shape(s: &SubMesh) -> (f64, [f64; 3], [f64; 3], [f64; 3]) {
    let p = |i: u32| Vec3::from(s.vertices[i as usize].position).as_dvec3();
    let (mut area, mut c) = (0.0, glam::DVec3::ZERO);
    let (mut lo, mut hi) = (glam::DVec3::splat(f64::MAX), glam::DVec3::splat(f64::MIN));
    for t in s.indices.chunks_exact(3) {
        let (a, b, d) = (p(t[0]), p(t[1]), p(t[2]));
        let ar = (b - a).cross(d - a).length() / 2.0;
        area += ar;
        c += ar * (a + b + d) / 3.0;
        for v in [a, b, d] {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    (area, (c / area).to_array(), lo.to_array(), hi.to_array())
}

#[test]
fn cooked_chains_read_back_within_the_cooked_precision() {
    for m in common::REAL {
        let (prepared, _) = import_prepared(&common::mesh_path(m)).unwrap();
        let chain = generate_lod_chain(&prepared.mesh, &LodChainConfig::default());
        let records = ChainRecords::Cooked(CookConfig::default());
        let bytes = encode_lod_chain_as(&prepared.mesh.name, &chain, &records).unwrap();
        let full = encode_lod_chain(&prepared.mesh.name, &chain).unwrap();
        assert!(
            bytes.len() * 2 < full.len(),
            "{m}: cooked {} bytes against {} full",
            bytes.len(),
            full.len()
        );
        let aligned = AlignedBytes::from(&bytes[..]);
        let file = read_lod_chain(&aligned).unwrap();
        assert_eq!(file.version(), Version::Cooked);
        assert!(file.manifest().cooked);
        for (entry, level) in file.manifest().levels.iter().zip(&chain.levels) {
            // A level's sub-meshes are cooked together (`CookConfig::merge_parts`)
            // when that is smaller: their positions share a grid over the level.
            let (mut lo, mut hi) = ([f64::MAX; 3], [f64::MIN; 3]);
            for sub in &level.mesh.submeshes {
                let b = shape(sub);
                for k in 0..3 {
                    lo[k] = lo[k].min(b.2[k]);
                    hi[k] = hi[k].max(b.3[k]);
                }
            }
            let level_extent = (0..3).map(|k| hi[k] - lo[k]).fold(0.0, f64::max);
            for (s, sub) in entry.submeshes.iter().zip(&level.mesh.submeshes) {
                let record = file.record(s.record).unwrap();
                assert_eq!(record.tag, RecordTag::MESH_COOKED_SET);
                let back = decode_lod_entry(&record, s).unwrap();
                assert_eq!(back.material, sub.material);
                assert_eq!(
                    back.triangle_count(),
                    sub.triangle_count(),
                    "{m} {}",
                    s.material
                );
                // Tangents kept where the source had them (and generated once where
                // it has uvs and none).
                assert!(back.has_tangents || !sub.has_tangents, "{m}: tangents lost");
                let (want, got) = (shape(sub), shape(&back));
                // 16-bit positions: half a step of the level's largest extent per
                // component.
                let tol = level_extent / 65535.0;
                for k in 0..3 {
                    assert!((got.2[k] - want.2[k]).abs() <= tol, "{m}: box min {k}");
                    assert!((got.3[k] - want.3[k]).abs() <= tol, "{m}: box max {k}");
                    // The centroid weighs each triangle by an area that moved too.
                    assert!(
                        (got.1[k] - want.1[k]).abs() <= 4.0 * tol,
                        "{m}: centroid {k}: {} against {}",
                        got.1[k],
                        want.1[k]
                    );
                }
                assert!(
                    (got.0 - want.0).abs() <= 1e-3 * want.0 + 1e-9,
                    "{m}: area {} against {}",
                    got.0,
                    want.0
                );
                for v in &back.vertices {
                    let n = Vec3::from(v.normal).length();
                    assert!((n - 1.0).abs() < 1e-4, "{m}: normal length {n}");
                }
            }
        }
        // A truncated cooked record is an error, not a panic.
        let entry = &file.manifest().levels[0].submeshes[0];
        let record = file.record(entry.record).unwrap();
        for cut in [0, 16, record.bytes.len() / 2, record.bytes.len() - 1] {
            let short = farsight_format::Record {
                bytes: &record.bytes[..cut],
                ..record
            };
            assert!(decode_lod_entry(&short, entry).is_err(), "{m}: cut {cut}");
        }
    }
}

#[test]
fn fox_skin_radius_bounds_every_pose() {
    let skinned = load_skinned_meshes(&common::mesh_path("Fox.glb")).unwrap();
    assert!(!skinned.is_empty());
    let s = &skinned[0];
    assert_eq!(s.joints.len(), s.positions.len());
    assert_eq!(s.inverse_bind_matrices.len(), s.joint_nodes.len());
    assert!(s.skin_radius > 0.0 && s.skin_radius.is_finite());
    let joints = s.joint_bind_positions();
    // The radius is the furthest influence: reached, never exceeded.
    let mut max = 0.0f32;
    for (v, (j, w)) in s.positions.iter().zip(s.joints.iter().zip(&s.weights)) {
        for k in 0..4 {
            if w[k] > 0.0 {
                max = max.max(Vec3::from(*v).distance(joints[j[k] as usize]));
            }
        }
    }
    assert_eq!(max, s.skin_radius);
    // Random rigid poses: a skinned vertex stays inside the box of its joints' posed
    // positions grown by the skin radius (what the posed-bounds cull relies on).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for _ in 0..8 {
        let pose: Vec<Mat4> = joints
            .iter()
            .map(|&jp| {
                let q = Quat::from_euler(
                    glam::EulerRot::XYZ,
                    rng.random_range(-1.5..1.5),
                    rng.random_range(-1.5..1.5),
                    rng.random_range(-1.5..1.5),
                );
                let t = Vec3::new(
                    rng.random_range(-50.0..50.0),
                    rng.random_range(-50.0..50.0),
                    rng.random_range(-50.0..50.0),
                );
                // Rotate about the joint, then move it.
                Mat4::from_translation(jp + t) * Mat4::from_quat(q) * Mat4::from_translation(-jp)
            })
            .collect();
        for (v, (j, w)) in s.positions.iter().zip(s.joints.iter().zip(&s.weights)) {
            let v = Vec3::from(*v);
            let mut posed = Vec3::ZERO;
            let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
            let sum: f32 = w.iter().sum();
            for k in 0..4 {
                if w[k] > 0.0 {
                    let m = pose[j[k] as usize];
                    posed += m.transform_point3(v) * (w[k] / sum);
                    let pj = m.transform_point3(joints[j[k] as usize]);
                    lo = lo.min(pj);
                    hi = hi.max(pj);
                }
            }
            let r = Vec3::splat(s.skin_radius * 1.0001 + 1e-3);
            assert!(posed.cmpge(lo - r).all() && posed.cmple(hi + r).all());
        }
    }
    // A glTF without skins has none.
    assert!(
        load_skinned_meshes(&common::mesh_path("FlightHelmet/FlightHelmet.gltf"))
            .unwrap()
            .is_empty()
    );
}
