//! Discrete LOD chains (seed 002) on the real meshes, and Fox.glb's skin.

mod common;

use farsight_format::AlignedBytes;
use farsight_lod::{screen_space_error_px, ProjectionInfo};
use farsight_mesh::{
    decode_lod_submesh, encode_lod_chain, generate_lod_chain, import_prepared, load_skinned_meshes,
    read_lod_chain, LodChainConfig,
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
