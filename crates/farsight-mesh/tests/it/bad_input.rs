//! Every bad-input case of issue 4 returns its typed error naming the file; what
//! can be repaired comes back as a warning.

use crate::common;

use std::path::{Path, PathBuf};

use farsight_mesh::{
    cook_clusters, import, ClusterConfig, CookError, ImportConfig, ImportErrorKind, Warning,
};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("farsight-mesh-bad-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn import_err(path: &Path) -> ImportErrorKind {
    let e = import(path, &ImportConfig::default()).expect_err("bad input must fail");
    assert_eq!(e.path, path, "the error names the file");
    assert!(e.to_string().contains(&path.display().to_string()));
    e.kind
}

/// A one-triangle glTF whose buffer is a data URI; `patch` edits the JSON text.
fn gltf_text(patch: impl Fn(String) -> String) -> String {
    use base64::Engine as _;
    let mut bin = Vec::new();
    for f in [0.0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0] {
        bin.extend_from_slice(&f.to_le_bytes());
    }
    for i in [0u16, 1, 2, 0] {
        bin.extend_from_slice(&i.to_le_bytes());
    }
    let uri = format!(
        "data:application/octet-stream;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bin)
    );
    let json = format!(
        r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[0]}}],"nodes":[{{"mesh":0}}],
"meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"indices":1,"mode":4}}]}}],
"buffers":[{{"byteLength":44,"uri":"{uri}"}}],
"bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":36}},{{"buffer":0,"byteOffset":36,"byteLength":6}}],
"accessors":[{{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}},
{{"bufferView":1,"componentType":5123,"count":3,"type":"SCALAR"}}]}}"#
    );
    patch(json)
}

#[test]
fn a_valid_minimal_gltf_imports_and_generates_normals() {
    let p = write("ok.gltf", gltf_text(|s| s).as_bytes());
    let scene = import(&p, &ImportConfig::default()).unwrap();
    assert_eq!(scene.meshes[0].triangle_count(), 1);
    assert!(scene
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::NormalsGenerated { .. })));
    assert_eq!(
        scene.meshes[0].submeshes[0].vertices[0].normal,
        [0.0, 0.0, 1.0]
    );
}

#[test]
fn missing_file_and_unknown_extension() {
    let p = dir().join("nope.obj");
    assert!(matches!(import_err(&p), ImportErrorKind::Io(_)));
    let p = write("mesh.stl", b"solid");
    assert!(matches!(
        import_err(&p),
        ImportErrorKind::UnknownExtension { .. }
    ));
}

#[test]
fn missing_buffer() {
    let p = write(
        "missing.gltf",
        gltf_text(|s| {
            let start = s.find("data:").unwrap();
            let end = s[start..].find('"').unwrap() + start;
            format!("{}absent.bin{}", &s[..start], &s[end..])
        })
        .as_bytes(),
    );
    match import_err(&p) {
        ImportErrorKind::MissingBuffer {
            buffer: 0,
            uri: Some(u),
            ..
        } => assert_eq!(u, "absent.bin"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn buffer_shorter_than_declared() {
    let p = write(
        "short.gltf",
        gltf_text(|s| s.replace(r#""byteLength":44"#, r#""byteLength":4400"#)).as_bytes(),
    );
    assert!(matches!(
        import_err(&p),
        ImportErrorKind::BufferTooShort {
            declared: 4400,
            available: 44,
            ..
        }
    ));
}

#[test]
fn accessor_past_its_view() {
    let p = write(
        "past.gltf",
        gltf_text(|s| s.replace(r#""count":3,"type":"VEC3""#, r#""count":30,"type":"VEC3""#))
            .as_bytes(),
    );
    assert!(matches!(
        import_err(&p),
        ImportErrorKind::AccessorOutOfBounds { accessor: 0, .. }
    ));
}

#[test]
fn index_out_of_range_gltf_and_obj() {
    use base64::Engine as _;
    let mut bin = Vec::new();
    for f in [0.0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0] {
        bin.extend_from_slice(&f.to_le_bytes());
    }
    for i in [0u16, 1, 7, 0] {
        bin.extend_from_slice(&i.to_le_bytes());
    }
    let uri = base64::engine::general_purpose::STANDARD.encode(&bin);
    let p = write(
        "idx.gltf",
        gltf_text(|s| {
            let start = s.find("base64,").unwrap() + 7;
            let end = s[start..].find('"').unwrap() + start;
            format!("{}{uri}{}", &s[..start], &s[end..])
        })
        .as_bytes(),
    );
    assert!(matches!(
        import_err(&p),
        ImportErrorKind::IndexOutOfRange {
            index: 7,
            vertex_count: 3,
            ..
        }
    ));
    let p = write("idx.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n");
    assert!(matches!(import_err(&p), ImportErrorKind::Obj { .. }));
}

#[test]
fn non_triangle_primitive_mode() {
    let p = write(
        "lines.gltf",
        gltf_text(|s| s.replace(r#""mode":4"#, r#""mode":1"#)).as_bytes(),
    );
    assert!(matches!(
        import_err(&p),
        ImportErrorKind::NonTrianglePrimitive {
            mesh: 0,
            primitive: 0,
            ..
        }
    ));
}

#[test]
fn nan_positions() {
    let p = write("nan.obj", b"v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    assert!(matches!(
        import_err(&p),
        ImportErrorKind::NonFinite {
            attribute: "position",
            ..
        }
    ));
}

#[test]
fn unsupported_required_extension() {
    let p = write("ext.gltf", gltf_text(|s| s.replacen('{', r#"{"extensionsRequired":["KHR_draco_mesh_compression"],"extensionsUsed":["KHR_draco_mesh_compression"],"#, 1)).as_bytes());
    match import_err(&p) {
        ImportErrorKind::GeometryExtensionUnsupported { name } => {
            assert_eq!(name, "KHR_draco_mesh_compression")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_json_truncated_glb_and_sparse() {
    let p = write("broken.gltf", b"{\"asset\": ");
    assert!(matches!(import_err(&p), ImportErrorKind::Gltf { .. }));
    let fox = std::fs::read(common::mesh_path("Fox.glb")).unwrap();
    for cut in [10, 100, fox.len() / 2, fox.len() - 1] {
        let p = write("cut.glb", &fox[..cut]);
        let k = import_err(&p);
        assert!(
            matches!(
                k,
                ImportErrorKind::Gltf { .. }
                    | ImportErrorKind::MissingBuffer { .. }
                    | ImportErrorKind::BufferTooShort { .. }
            ),
            "{cut}: {k:?}"
        );
    }
    let p = write("sparse.gltf", gltf_text(|s| s.replace(
        r#""count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}"#,
        r#""count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0],"sparse":{"count":1,"indices":{"bufferView":1,"componentType":5123},"values":{"bufferView":0}}}"#,
    )).as_bytes());
    assert!(matches!(
        import_err(&p),
        ImportErrorKind::SparseAccessor { accessor: 0, .. }
    ));
}

#[test]
fn empty_and_degenerate_inputs() {
    let p = write("empty.obj", b"# nothing\nv 0 0 0\n");
    assert!(matches!(import_err(&p), ImportErrorKind::Empty));
    // One good triangle and one degenerate: the degenerate goes, with a warning.
    let p = write(
        "degen.obj",
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 2 0 0\nf 1 2 3\nf 1 2 4\n",
    );
    let scene = import(&p, &ImportConfig::default()).unwrap();
    assert_eq!(scene.meshes[0].triangle_count(), 1);
    assert!(scene
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::DegenerateTrianglesRemoved { count: 1, .. })));
    assert!(scene
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::NormalsGenerated { .. })));
}

#[test]
fn bad_cluster_config_is_refused() {
    let mesh = common::sphere(8);
    for config in [
        ClusterConfig {
            max_triangles: 200,
            ..ClusterConfig::default()
        },
        ClusterConfig {
            simplify_ratio: 1.5,
            ..ClusterConfig::default()
        },
        ClusterConfig {
            max_levels: 0,
            ..ClusterConfig::default()
        },
    ] {
        assert!(matches!(
            cook_clusters(&mesh, &config),
            Err(CookError::BadConfig { .. })
        ));
    }
}

#[test]
fn untrustworthy_levels_are_refused() {
    use farsight_mesh::{check_cluster_levels, prepare};
    let prepared = prepare(&common::sphere(32));
    let cooked = cook_clusters(&prepared.mesh, &ClusterConfig::default()).unwrap();
    let (vertices, lod0) = prepared.mesh.merged();
    check_cluster_levels(&cooked.levels, &vertices, &lod0).unwrap();
    // Error not monotonic.
    let mut levels = cooked.levels.clone();
    levels[1].clusters[0].error = levels[1].clusters[0].parent_error * 2.0;
    assert!(matches!(
        check_cluster_levels(&levels, &vertices, &lod0),
        Err(CookError::ErrorNotMonotonic { level: 1, .. })
    ));
    // A level that is not complete: drop one cluster's triangles. Level 0 too
    // (which, while it holds exactly LOD0's triangles, reuses LOD0's sorted edges
    // instead of sorting its own).
    for broken in [1, 0] {
        let mut levels = cooked.levels.clone();
        let l = &mut levels[broken];
        let end = l.offsets[1] as usize;
        let other = l.indices[end];
        for i in &mut l.indices[..end] {
            *i = other;
        }
        assert!(
            matches!(
                check_cluster_levels(&levels, &vertices, &lod0),
                Err(CookError::LevelIncomplete { level, .. }) if level == broken
            ),
            "level {broken}"
        );
    }
    // A cut that opens a crack: a finer cluster claims a coarser parent error, so the
    // uniform cut draws it beside its own replacement's neighbours.
    let mut levels = cooked.levels.clone();
    let t = levels[1].max_parent_error();
    levels[0].clusters[0].parent_error = t * 4.0;
    let r = check_cluster_levels(&levels, &vertices, &lod0);
    assert!(
        matches!(
            r,
            Err(CookError::CrackInCut { .. }) | Err(CookError::LevelErrorsNotOrdered { .. })
        ),
        "{r:?}"
    );
}

#[test]
fn a_cut_with_a_hole_is_refused_as_a_crack() {
    use farsight_mesh::{check_cluster_levels, prepare};
    let prepared = prepare(&common::sphere(32));
    let cooked = cook_clusters(&prepared.mesh, &ClusterConfig::default()).unwrap();
    let (vertices, lod0) = prepared.mesh.merged();
    // A level-1 cluster claims an own error above the 0 -> 1 hand-over: at that
    // threshold it is not drawn, and its children (whose parent error is still the
    // hand-over's) are not either. Errors stay monotonic and every level stays
    // complete alone; only the cut has a hole.
    let t = cooked.levels[0].max_parent_error();
    let mut levels = cooked.levels.clone();
    let c = levels[1]
        .clusters
        .iter_mut()
        .find(|c| c.parent_error > t && c.parent_error < f32::MAX)
        .expect("a level-1 cluster drawn at the first hand-over");
    c.error = 0.5 * (t + c.parent_error);
    let r = check_cluster_levels(&levels, &vertices, &lod0);
    assert!(
        matches!(r, Err(CookError::CrackInCut { threshold, open_edges }) if threshold == t && open_edges > 0),
        "{r:?}"
    );
}
