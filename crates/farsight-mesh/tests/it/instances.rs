//! Issue 16, part 0: meshes drawn more than once are cooked once, their placements
//! kept in the manifest, for cooked LOD chains (any number of distinct meshes) and
//! cluster DAG files (one mesh placed many times, or several meshes: one DAG each);
//! readers refuse bad instance tables by kind.

use crate::common;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use farsight_format::{
    AlignedBytes, CookConfig, FileWriter, FormatError, Instance, Manifest, RecordIndex, RecordTag,
    Section, Version,
};
use farsight_mesh::{
    cook_file, decode_lod_entry, read_lod_chain, ChainRecords, CookKind, Cooked, LodChainConfig,
    LodChainManifest,
};
use farsight_testkit::scratch as scratch_dir;
use glam::{Mat4, Quat, Vec3};

fn chain_kind() -> CookKind {
    CookKind::LodChain(
        LodChainConfig::default(),
        ChainRecords::Cooked(CookConfig::default()),
    )
}

/// SimpleInstancing's 125 placements read straight from its buffer (translation,
/// rotation, scale accessors of `EXT_mesh_gpu_instancing`), as glTF defines them:
/// T * R * S.
fn simple_instancing_transforms(path: &Path) -> Vec<Mat4> {
    let doc = gltf::Gltf::open(path).unwrap().document;
    let bin = std::fs::read(path.with_file_name("SimpleInstancing_data.bin")).unwrap();
    let node = doc.nodes().next().unwrap();
    let ext = node.extension_value("EXT_mesh_gpu_instancing").unwrap();
    let floats = |name: &str| -> Vec<f32> {
        let a = doc
            .accessors()
            .nth(ext["attributes"][name].as_u64().unwrap() as usize)
            .unwrap();
        let v = a.view().unwrap();
        let at = v.offset() + a.offset();
        let n = a.count() * a.dimensions().multiplicity();
        bin[at..at + 4 * n]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (t, r, s) = (floats("TRANSLATION"), floats("ROTATION"), floats("SCALE"));
    assert_eq!(t.len(), 3 * 125);
    (0..125)
        .map(|i| {
            Mat4::from_scale_rotation_translation(
                Vec3::from_slice(&s[3 * i..]),
                Quat::from_slice(&r[4 * i..]),
                Vec3::from_slice(&t[3 * i..]),
            )
        })
        .collect()
}

fn close(a: &[f32; 16], b: &[f32; 16]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| (x - y).abs() <= 1e-5 * (1.0 + y.abs()))
}

#[test]
fn simple_instancing_cooks_to_one_geometry_and_its_125_transforms() {
    let path = common::mesh_path("SimpleInstancing/SimpleInstancing.gltf");
    let want = simple_instancing_transforms(&path);
    let out = cook_file(&path, &chain_kind()).unwrap();
    let aligned = AlignedBytes::from(&out.bytes[..]);
    let file = read_lod_chain(&aligned).unwrap();
    let m = file.manifest();
    assert_eq!(m.geometry_count(), 1);
    assert_eq!(m.levels[0].triangles, 12, "the cube is stored once");
    assert_eq!(m.instances.len(), 125);
    for (i, (got, want)) in m.instances.iter().zip(&want).enumerate() {
        assert_eq!(got.geometry, 0);
        assert!(
            close(&got.transform, &want.to_cols_array()),
            "instance {i}: {:?} against {:?}",
            got.transform,
            want
        );
    }
    // The level is one cooked set record, its part the cube.
    let entry = &m.levels[0].submeshes[0];
    let record = file.record(entry.record).unwrap();
    assert_eq!(record.tag, RecordTag::MESH_COOKED_SET);
    assert_eq!(
        decode_lod_entry(&record, entry).unwrap().triangle_count(),
        12
    );
    let Cooked::LodChain { chains, instances } = &out.cooked else {
        panic!("a chain cook")
    };
    assert_eq!((chains.len(), instances.len()), (1, 125));
    // The cluster DAG file keeps the same placements.
    let dag = cook_file(
        &path,
        &CookKind::Clusters(farsight_mesh::ClusterConfig::default()),
    )
    .unwrap();
    let Cooked::Clusters(mesh) = &dag.cooked else {
        panic!("a DAG cook")
    };
    assert_eq!(mesh.instances.len(), 125);
    for (got, want) in mesh.instances.iter().zip(&want) {
        assert!(close(got, &want.to_cols_array()));
    }
}

/// A unit box (24 vertices, flat normals) scaled by `s`, as bytes: positions,
/// normals, u32 indices.
fn box_bytes(s: f32) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let (mut p, mut n, mut idx) = (Vec::new(), Vec::new(), Vec::new());
    let faces: [([f32; 3], [f32; 3], [f32; 3]); 6] = [
        ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
        ([0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        ([0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]),
    ];
    for (f, (nn, u, v)) in faces.iter().enumerate() {
        for (a, b) in [(-1.0f32, -1.0f32), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            for k in 0..3 {
                p.extend_from_slice(&(s * (nn[k] + a * u[k] + b * v[k])).to_le_bytes());
                n.extend_from_slice(&nn[k].to_le_bytes());
            }
        }
        let base = 4 * f as u32;
        for i in [0, 1, 2, 0, 2, 3] {
            idx.extend_from_slice(&(base + i).to_le_bytes());
        }
    }
    (p, n, idx)
}

/// A glTF of two distinct box meshes (scaled 1 and 0.5), the first drawn by 3
/// nodes and the second by 5 (one of them a child of a moved parent), and the
/// expected world transform of each placement in scene order.
fn two_mesh_scene(dir: &Path) -> (PathBuf, Vec<(u32, Mat4)>) {
    std::fs::create_dir_all(dir).unwrap();
    let mut bin = Vec::new();
    let mut views = Vec::new();
    let mut accessors = Vec::new();
    let mut meshes = Vec::new();
    for (m, s) in [1.0f32, 0.5].into_iter().enumerate() {
        let (p, n, idx) = box_bytes(s);
        let mut add = |bytes: &[u8], count: usize, kind: &str, comp: u32, extra: &str| {
            views.push(format!(
                r#"{{"buffer":0,"byteOffset":{},"byteLength":{}}}"#,
                bin.len(),
                bytes.len()
            ));
            bin.extend_from_slice(bytes);
            accessors.push(format!(
                r#"{{"bufferView":{},"componentType":{comp},"count":{count},"type":"{kind}"{extra}}}"#,
                views.len() - 1
            ));
            accessors.len() - 1
        };
        let mm = format!(r#","min":[{},{},{}],"max":[{s},{s},{s}]"#, -s, -s, -s);
        let pa = add(&p, 24, "VEC3", 5126, &mm);
        let na = add(&n, 24, "VEC3", 5126, "");
        let ia = add(&idx, 36, "SCALAR", 5125, "");
        meshes.push(format!(
            r#"{{"name":"box{m}","primitives":[{{"attributes":{{"POSITION":{pa},"NORMAL":{na}}},"indices":{ia}}}]}}"#
        ));
    }
    // Nodes 0-2 draw mesh 0; nodes 3-6 draw mesh 1; node 7 is a moved, rotated
    // parent whose child (node 8) draws mesh 1.
    let mut nodes = Vec::new();
    let mut want = Vec::new();
    for i in 0..3 {
        let t = Vec3::new(3.0 * i as f32, 0.0, 0.0);
        nodes.push(format!(
            r#"{{"mesh":0,"translation":[{},{},{}]}}"#,
            t.x, t.y, t.z
        ));
        want.push((0, Mat4::from_translation(t)));
    }
    for i in 0..4 {
        let t = Vec3::new(0.0, 2.0 * i as f32 + 1.0, -1.0);
        let sc = 1.0 + 0.25 * i as f32;
        nodes.push(format!(
            r#"{{"mesh":1,"translation":[{},{},{}],"scale":[{sc},{sc},{sc}]}}"#,
            t.x, t.y, t.z
        ));
        want.push((
            1,
            Mat4::from_scale_rotation_translation(Vec3::splat(sc), Quat::IDENTITY, t),
        ));
    }
    let q = Quat::from_rotation_y(0.5).normalize();
    nodes.push(format!(
        r#"{{"children":[8],"translation":[5,0,5],"rotation":[{},{},{},{}]}}"#,
        q.x, q.y, q.z, q.w
    ));
    nodes.push(r#"{"mesh":1,"translation":[0,1,0]}"#.to_string());
    want.push((
        1,
        Mat4::from_rotation_translation(q, Vec3::new(5.0, 0.0, 5.0))
            * Mat4::from_translation(Vec3::new(0.0, 1.0, 0.0)),
    ));
    let uri = format!(
        "data:application/octet-stream;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bin)
    );
    let json = format!(
        r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[0,1,2,3,4,5,6,7]}}],"nodes":[{}],"meshes":[{}],"buffers":[{{"byteLength":{},"uri":"{uri}"}}],"bufferViews":[{}],"accessors":[{}]}}"#,
        nodes.join(","),
        meshes.join(","),
        bin.len(),
        views.join(","),
        accessors.join(",")
    );
    let path = dir.join("two_meshes.gltf");
    std::fs::write(&path, json).unwrap();
    (path, want)
}

#[test]
fn two_meshes_drawn_3_and_5_times_keep_2_geometries_and_8_transforms() {
    let dir = scratch_dir("two");
    let (path, want) = two_mesh_scene(&dir);
    let out = cook_file(&path, &chain_kind()).unwrap();
    let aligned = AlignedBytes::from(&out.bytes[..]);
    let file = read_lod_chain(&aligned).unwrap();
    let m = file.manifest();
    assert_eq!(m.geometry_count(), 2);
    assert_eq!(m.instances.len(), 8);
    let per_geometry: Vec<usize> = (0..2)
        .map(|g| m.instances.iter().filter(|i| i.geometry == g).count())
        .collect();
    assert_eq!(per_geometry, [3, 5]);
    for (i, (got, (g, t))) in m.instances.iter().zip(&want).enumerate() {
        assert_eq!(got.geometry, *g, "instance {i}");
        assert!(close(&got.transform, &t.to_cols_array()), "instance {i}");
    }
    // Each geometry is stored once, in its own space: its box is its own size.
    for (g, half) in [(0usize, 1.0f32), (1, 0.5)] {
        let levels = m.geometry_levels(g).unwrap();
        assert_eq!(levels[0].triangles, 12);
        let entry = &levels[0].submeshes[0];
        let sub = decode_lod_entry(&file.record(entry.record).unwrap(), entry).unwrap();
        let reach = sub
            .vertices
            .iter()
            .flat_map(|v| v.position)
            .fold(0.0f32, |a, c| a.max(c.abs()));
        assert!((reach - half).abs() < 1e-3, "geometry {g}: reach {reach}");
    }
    // Eight boxes' worth of triangles are not stored: two are.
    let stored: u32 = m
        .all_levels()
        .filter(|l| l.name.ends_with("lod0"))
        .map(|l| l.triangles)
        .sum();
    assert_eq!(stored, 24);
    std::fs::remove_dir_all(&dir).ok();
}

/// A LOD chain manifest of one geometry written with the instance table `instances`
/// (no records: the instance checks come before any record is read).
fn chain_file_with(instances: Vec<Instance>, geometries: usize) -> Vec<u8> {
    let good = cook_file(
        &common::mesh_path("SimpleInstancing/SimpleInstancing.gltf"),
        &chain_kind(),
    )
    .unwrap();
    let aligned = AlignedBytes::from(&good.bytes[..]);
    let file = read_lod_chain(&aligned).unwrap();
    let mut m: LodChainManifest = file.manifest().clone();
    let first = farsight_mesh::LodGeometryEntry {
        name: "copy".into(),
        levels: m.levels.clone(),
    };
    m.geometries = vec![first; geometries - 1];
    m.instances = instances;
    let mut w = FileWriter::new(Version::Cooked);
    let set = file.record(m.levels[0].submeshes[0].record).unwrap();
    let r = w.add_record(RecordTag::MESH_COOKED_SET, set.bytes);
    for l in m
        .levels
        .iter_mut()
        .chain(m.geometries.iter_mut().flat_map(|g| &mut g.levels))
    {
        for s in &mut l.submeshes {
            s.record = r;
        }
    }
    w.finish(&m).unwrap()
}

#[test]
fn readers_refuse_bad_instance_tables_by_kind() {
    let at = |x: f32| Mat4::from_translation(Vec3::new(x, 0.0, 0.0)).to_cols_array();
    let ok = |g: u32, x: f32| Instance {
        geometry: g,
        transform: at(x),
    };
    let read = |bytes: Vec<u8>| {
        let aligned = AlignedBytes::from(&bytes[..]);
        read_lod_chain(&aligned).map(|_| ())
    };
    // A good table of two geometries reads.
    read(chain_file_with(vec![ok(0, 0.0), ok(1, 2.0)], 2)).unwrap();
    // An instance naming a geometry the file does not have.
    assert!(matches!(
        read(chain_file_with(vec![ok(0, 0.0), ok(2, 2.0)], 2)),
        Err(FormatError::BadField {
            section: Section::Manifest,
            field: "instance geometry",
            found: 2
        })
    ));
    // A geometry no instance draws.
    assert!(matches!(
        read(chain_file_with(vec![ok(0, 0.0), ok(0, 2.0)], 2)),
        Err(FormatError::BadField {
            field: "geometry no instance draws",
            found: 1,
            ..
        })
    ));
    // No instances for two geometries.
    assert!(matches!(
        read(chain_file_with(Vec::new(), 2)),
        Err(FormatError::BadField {
            field: "instance count",
            found: 0,
            ..
        })
    ));
    // NaN and infinity in a transform.
    for v in [f32::NAN, f32::INFINITY] {
        let mut bad = ok(0, 1.0);
        bad.transform[13] = v;
        assert!(matches!(
            read(chain_file_with(vec![bad], 1)),
            Err(FormatError::NonFinite {
                what: "instance transform"
            })
        ));
    }
    // A projective transform (last row not 0 0 0 1).
    let mut bad = ok(0, 1.0);
    bad.transform[7] = 0.5;
    assert!(matches!(
        read(chain_file_with(vec![bad], 1)),
        Err(FormatError::BadField {
            field: "instance transform last row",
            found: 1,
            ..
        })
    ));
    // A transform of the wrong length: the manifest does not parse.
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Short {
        name: String,
        levels: Vec<farsight_mesh::LodLevelEntry>,
        cooked: bool,
        instances: Vec<(u32, [f32; 15])>,
    }
    impl Manifest for Short {
        fn visit_records(&self, _: &mut dyn FnMut(RecordIndex, RecordTag)) {}
    }
    let bytes = FileWriter::new(Version::Cooked)
        .finish(&Short {
            name: "short".into(),
            levels: Vec::new(),
            cooked: true,
            instances: vec![(0, [0.0; 15])],
        })
        .unwrap();
    assert!(matches!(read(bytes), Err(FormatError::Manifest { .. })));
    // The writer refuses what the reader would.
    let chain = farsight_mesh::generate_lod_chain(&common::sphere(4), &LodChainConfig::default());
    let mut bad = ok(0, 1.0);
    bad.transform[0] = f32::NAN;
    assert!(matches!(
        farsight_mesh::encode_lod_chains(
            &[("sphere", &chain)],
            &[bad],
            &ChainRecords::Cooked(CookConfig::default())
        ),
        Err(FormatError::NonFinite { .. })
    ));
    // A cluster DAG file's placements: NaN refused on read.
    let dag = cook_file(
        &common::mesh_path("SimpleInstancing/SimpleInstancing.gltf"),
        &CookKind::Clusters(farsight_mesh::ClusterConfig::default()),
    )
    .unwrap();
    let Cooked::Clusters(mut mesh) = dag.cooked else {
        panic!("a DAG cook")
    };
    mesh.instances[3][12] = f32::NAN;
    let bytes = mesh.encode().unwrap();
    let aligned = AlignedBytes::from(&bytes[..]);
    assert!(matches!(
        farsight_format::Container::<farsight_format::ClusterMeshManifest>::read(&aligned),
        Err(FormatError::NonFinite {
            what: "instance transform"
        })
    ));
}

/// A file drawing each mesh once is cooked as before: one geometry, no instances,
/// no `instances` in its manifest.
#[test]
fn a_mesh_drawn_once_has_no_instance_table() {
    let out = cook_file(&common::mesh_path("bunny.obj"), &chain_kind()).unwrap();
    let aligned = AlignedBytes::from(&out.bytes[..]);
    let file = read_lod_chain(&aligned).unwrap();
    assert_eq!(file.manifest().geometry_count(), 1);
    assert!(file.manifest().instances.is_empty());
    assert!(!file.raw().manifest_text().contains("instances"));
}

/// The cluster DAG of a scene of two distinct meshes drawn 3 and 5 times: one file
/// of two DAGs, each stored once in its own space, and the 8 placements in scene
/// order; the same bytes cooked again.
#[test]
fn two_meshes_drawn_3_and_5_times_keep_2_cluster_dags_and_8_placements() {
    use farsight_format::{ClusterLevel, ClusterMeshManifest, Container};
    let dir = scratch_dir("two-dag");
    let (path, want) = two_mesh_scene(&dir);
    let kind = CookKind::Clusters(farsight_mesh::ClusterConfig::default());
    let out = cook_file(&path, &kind).unwrap();
    let Cooked::ClusterScene { meshes, placements } = &out.cooked else {
        panic!("a scene of two meshes cooks as a cluster scene")
    };
    assert_eq!((meshes.len(), placements.len()), (2, 8));
    let aligned = AlignedBytes::from(&out.bytes[..]);
    let file = Container::<ClusterMeshManifest>::read(&aligned).unwrap();
    let m = file.manifest();
    assert_eq!(m.geometry_count(), 2);
    assert!(m.instances.is_empty(), "a scene places with `placements`");
    let table = m.all_placements();
    assert_eq!(table.len(), 8);
    for (i, (got, (g, t))) in table.iter().zip(&want).enumerate() {
        assert_eq!(got.geometry, *g, "placement {i}");
        assert!(close(&got.transform, &t.to_cols_array()), "placement {i}");
    }
    for (g, half) in [(0usize, 1.0f32), (1, 0.5)] {
        let geo = m.geometry(g).unwrap();
        assert_eq!(geo.levels[0].triangles, 12, "geometry {g} is one box");
        for k in 0..3 {
            assert!((geo.bounds_max[k] - half).abs() < 1e-3, "geometry {g}");
            assert!((geo.bounds_min[k] + half).abs() < 1e-3, "geometry {g}");
        }
        let level = ClusterLevel::parse(file.record(geo.levels[0].record).unwrap().bytes).unwrap();
        assert_eq!(level.header.triangle_count, 12);
        assert_eq!(level.header.bounds_max, geo.bounds_max);
    }
    assert_eq!(cook_file(&path, &kind).unwrap().bytes, out.bytes);
    std::fs::remove_dir_all(&dir).ok();
}

/// The corpus scenes that draw meshes more than once among others (cakeBirthday,
/// SubpassScene) cook as cluster scenes: every drawn mesh once, every placement
/// the import found, fewer triangles stored than drawn.
#[test]
fn corpus_scenes_keep_their_geometries_and_placements_as_cluster_dags() {
    use farsight_format::{ClusterMeshManifest, Container};
    let kind = CookKind::Clusters(farsight_mesh::ClusterConfig::default());
    for name in ["cakeBirthday.glb", "SubpassScene/SubpassScene.gltf"] {
        let path = common::mesh_path(name);
        let scene = farsight_mesh::import_gltf_instances(&path)
            .unwrap()
            .expect("the scene draws a mesh more than once");
        let out = cook_file(&path, &kind).unwrap_or_else(|e| panic!("{name}: {e}"));
        let aligned = AlignedBytes::from(&out.bytes[..]);
        let file = Container::<ClusterMeshManifest>::read(&aligned).unwrap();
        let m = file.manifest();
        assert_eq!(m.geometry_count(), scene.geometries.len(), "{name}");
        assert!(m.geometry_count() > 1, "{name}");
        let table = m.all_placements();
        assert_eq!(table.len(), scene.instances.len(), "{name}");
        for (got, want) in table.iter().zip(&scene.instances) {
            assert_eq!(got.geometry as usize, want.mesh, "{name}");
            assert!(
                close(&got.transform, &want.transform.to_cols_array()),
                "{name}"
            );
        }
        let lod0 = |g: usize| m.geometry(g).unwrap().levels[0].triangles as u64;
        let stored: u64 = (0..m.geometry_count()).map(lod0).sum();
        let drawn: u64 = table.iter().map(|p| lod0(p.geometry as usize)).sum();
        assert!(stored < drawn, "{name}: {stored} stored, {drawn} drawn");
    }
}
