//! Cluster level records: layout, validation and vertex packing precision.

use farsight_format::{
    encode_cluster_level, push_cluster_slot, AlignedBytes, ClusterInfo, ClusterLevel,
    ClusterLevelEntry, ClusterLevelHeader, ClusterMeshManifest, ClusterVertex, Container,
    FileWriter, FloatVertex, FormatError, RecordTag, Version, CLUSTER_SLOT_TRIANGLES,
    NO_PARENT_ERROR,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MIN: [f32; 3] = [-2.0, 0.0, -1.0];
const MAX: [f32; 3] = [2.0, 8.0, 1.5];

fn unit(rng: &mut ChaCha8Rng) -> [f32; 3] {
    loop {
        let v: [f32; 3] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        if l > 0.1 && l < 1.0 {
            return v.map(|x| x / l);
        }
    }
}

fn random_level(
    rng: &mut ChaCha8Rng,
    clusters: usize,
    vertices: u32,
) -> (
    ClusterLevelHeader,
    Vec<ClusterInfo>,
    Vec<ClusterVertex>,
    Vec<u32>,
) {
    let verts: Vec<ClusterVertex> = (0..vertices)
        .map(|_| {
            let p: [f32; 3] = std::array::from_fn(|i| rng.random_range(MIN[i]..MAX[i]));
            let n = unit(rng);
            let t = unit(rng);
            let fv = FloatVertex {
                position: p,
                normal: n,
                tangent: [t[0], t[1], t[2], if rng.random() { 1.0 } else { -1.0 }],
                uv: [rng.random(), rng.random()],
            };
            ClusterVertex::pack(&fv, MIN, MAX)
        })
        .collect();
    let mut infos = Vec::new();
    let mut indices = Vec::new();
    let mut total = 0;
    for g in 0..clusters {
        let n = rng.random_range(1..=CLUSTER_SLOT_TRIANGLES) as usize;
        total += n as u32;
        let tris: Vec<u32> = (0..3 * n).map(|_| rng.random_range(0..vertices)).collect();
        push_cluster_slot(&tris, &mut indices);
        infos.push(ClusterInfo {
            sphere: [0.0, 1.0, 0.0, 2.0],
            parent_sphere: [0.0, 1.0, 0.0, 3.0],
            error: 0.01,
            parent_error: if g % 2 == 0 { 0.02 } else { NO_PARENT_ERROR },
            triangle_count: n as u16,
            material: (g % 2) as u16,
            group: g as u32 / 4,
        });
    }
    let header = ClusterLevelHeader {
        level: 0,
        cluster_count: clusters as u32,
        vertex_count: vertices,
        slot_shift: 7,
        bounds_min: MIN,
        max_parent_error: NO_PARENT_ERROR,
        bounds_max: MAX,
        max_error: 0.01,
        triangle_count: total,
        material_count: 2,
        reserved: [0; 2],
    };
    (header, infos, verts, indices)
}

#[test]
fn level_round_trips_through_a_file_in_place() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (h, c, v, i) = random_level(&mut rng, 5, 300);
    let rec = encode_cluster_level(&h, &c, &v, &i).unwrap();
    let mut w = FileWriter::new(Version::Streamed);
    let idx = w.add_record(RecordTag::CLUSTER_LEVEL, &rec);
    let m = ClusterMeshManifest {
        name: "rock".into(),
        bounds_min: MIN,
        bounds_max: MAX,
        levels: vec![ClusterLevelEntry {
            record: idx,
            max_parent_error: h.max_parent_error,
            triangles: h.triangle_count,
            clusters: 5,
            vertices: 300,
            bytes: rec.len() as u64,
        }],
        materials: vec!["stone".into(), "moss".into()],
        instances: vec![translated_x(0.0), translated_x(2.5)],
        error_bounds: Some(farsight_format::error_bounds([&c[..]])),
        ..Default::default()
    };
    let bytes = AlignedBytes::from(&w.finish(&m).unwrap()[..]);
    let file = Container::<ClusterMeshManifest>::read(&bytes).unwrap();
    assert_eq!(file.manifest(), &m);
    let level = ClusterLevel::parse(file.record(idx).unwrap().bytes).unwrap();
    assert_eq!(level.header, h);
    assert_eq!(level.clusters, &c[..]);
    assert_eq!(level.vertices, &v[..]);
    assert_eq!(level.indices, &i[..]);
    // The cluster of a triangle is a shift away, and padding is zero-area.
    for (t, tri) in level.indices.chunks_exact(3).enumerate() {
        let cl = ClusterLevel::cluster_of_triangle(t as u32) as usize;
        let local = t % CLUSTER_SLOT_TRIANGLES as usize;
        if local >= level.clusters[cl].triangle_count as usize {
            assert!(tri[0] == tri[1] && tri[1] == tri[2]);
        }
    }
}

#[test]
fn bad_levels_are_refused() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let (h, c, v, i) = random_level(&mut rng, 3, 50);
    let good = encode_cluster_level(&h, &c, &v, &i).unwrap();
    // Index past the level's vertices.
    let mut bad_i = i.clone();
    bad_i[4] = 50;
    assert!(matches!(
        encode_cluster_level(&h, &c, &v, &bad_i),
        Err(FormatError::VertexIndexOutOfRange { index: 50, .. })
    ));
    // Padding that is not zero-area.
    let mut bad_c = c.clone();
    bad_c[0].triangle_count -= 1;
    let mut bad_h = h;
    bad_h.triangle_count -= 1;
    let r = encode_cluster_level(&bad_h, &bad_c, &v, &i);
    assert!(matches!(r, Err(FormatError::BadField { .. })), "{r:?}");
    // Every truncated prefix of the record.
    for n in 0..good.len() {
        let a = AlignedBytes::from(&good[..n]);
        assert!(ClusterLevel::parse(&a).is_err(), "prefix {n}");
    }
    // A material past the header's count, and clusters with no material at all.
    let mut bad_m = c.clone();
    bad_m[2].material = 2;
    assert!(matches!(
        encode_cluster_level(&h, &bad_m, &v, &i),
        Err(FormatError::BadField {
            field: "cluster material",
            found: 2,
            ..
        })
    ));
    let no_materials = ClusterLevelHeader {
        material_count: 0,
        ..h
    };
    assert!(matches!(
        encode_cluster_level(&no_materials, &c, &v, &i),
        Err(FormatError::BadField {
            field: "material_count",
            ..
        })
    ));
    // The same material past the count in file bytes is refused by the reader.
    let mut bytes = good.clone();
    let at = 64 + 2 * 48 + 42; // third cluster's `material`
    bytes[at..at + 2].copy_from_slice(&7u16.to_le_bytes());
    assert!(ClusterLevel::parse(&AlignedBytes::from(&bytes[..])).is_err());
    // NaN error.
    let mut nan_c = c.clone();
    nan_c[1].error = f32::NAN;
    assert!(matches!(
        encode_cluster_level(&h, &nan_c, &v, &i),
        Err(FormatError::NonFinite { .. })
    ));
}

#[test]
fn packed_vertex_precision() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut worst_deg = 0.0f64;
    for _ in 0..20_000 {
        let p: [f32; 3] = std::array::from_fn(|i| rng.random_range(MIN[i]..MAX[i]));
        let n = unit(&mut rng);
        let t = unit(&mut rng);
        let w = if rng.random() { 1.0 } else { -1.0 };
        let uv = [rng.random_range(-4.0..4.0), rng.random_range(-4.0..4.0)];
        let fv = FloatVertex {
            position: p,
            normal: n,
            tangent: [t[0], t[1], t[2], w],
            uv,
        };
        let back = ClusterVertex::pack(&fv, MIN, MAX).unpack(MIN, MAX);
        for a in 0..3 {
            let bound = (MAX[a] - MIN[a]) / 131072.0 + 1e-6;
            assert!(
                (back.position[a] - p[a]).abs() <= bound,
                "axis {a}: {p:?} -> {:?}",
                back.position
            );
        }
        assert_eq!(back.tangent[3], w, "tangent sign preserved");
        worst_deg = worst_deg.max(angle_deg(back.normal, n));
        for (b, u) in back.uv.iter().zip(uv) {
            assert!((b - u).abs() <= u.abs() / 1024.0 + 1e-7);
        }
    }
    assert!(worst_deg < 0.004, "worst normal error {worst_deg} degrees");
}

/// Angle between two vectors, well conditioned near zero (atan2 of cross and dot).
fn angle_deg(a: [f32; 3], b: [f32; 3]) -> f64 {
    let a = a.map(|x| x as f64);
    let b = b.map(|x| x as f64);
    let c = [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ];
    let cross = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    let dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    cross.atan2(dot).to_degrees()
}

/// The manifest's copies of each level's counts, size and `max_parent_error` must be
/// the record's, and a cluster file is cooked: a version word swapped to 1 (which the
/// checksum does not cover) is refused, not read with the wrong decoder.
#[test]
fn a_manifest_that_disagrees_with_its_records_or_a_swapped_version_is_refused() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let (h, c, v, i) = random_level(&mut rng, 4, 120);
    let rec = encode_cluster_level(&h, &c, &v, &i).unwrap();
    let file_as = |version, edit: &dyn Fn(&mut ClusterLevelEntry)| {
        let mut w = FileWriter::new(version);
        let record = w.add_record(RecordTag::CLUSTER_LEVEL, &rec);
        let mut entry = ClusterLevelEntry {
            record,
            max_parent_error: h.max_parent_error,
            triangles: h.triangle_count,
            clusters: h.cluster_count,
            vertices: h.vertex_count,
            bytes: rec.len() as u64,
        };
        edit(&mut entry);
        let m = ClusterMeshManifest {
            name: "rock".into(),
            bounds_min: MIN,
            bounds_max: MAX,
            levels: vec![entry],
            materials: vec!["stone".into(), "moss".into()],
            instances: Vec::new(),
            error_bounds: None,
            ..Default::default()
        };
        w.finish(&m).unwrap()
    };
    let file_with = |edit: &dyn Fn(&mut ClusterLevelEntry)| file_as(Version::Streamed, edit);
    let read = |bytes: &[u8]| {
        let bytes = AlignedBytes::from(bytes);
        Container::<ClusterMeshManifest>::read(&bytes).map(|_| ())
    };
    read(&file_with(&|_| {})).expect("the honest file reads");
    type Lie<'a> = (&'a str, &'a dyn Fn(&mut ClusterLevelEntry));
    let lies: [Lie; 5] = [
        ("triangles", &|e| e.triangles += 1),
        ("clusters", &|e| e.clusters -= 1),
        ("vertices", &|e| e.vertices += 7),
        ("bytes", &|e| e.bytes += 16),
        ("max_parent_error", &|e| e.max_parent_error = 0.5),
    ];
    for (field, lie) in lies {
        match read(&file_with(lie)) {
            Err(FormatError::ManifestDisagrees {
                level: 0, field: f, ..
            }) => {
                assert_eq!(f, field)
            }
            other => panic!("{field}: {other:?}"),
        }
    }
    // A version word swapped (the checksum does not cover it) fails the checksum
    // of the layout it names.
    let mut swapped = file_with(&|_| {});
    swapped[12..16].copy_from_slice(&2u32.to_le_bytes());
    let r = read(&swapped);
    assert!(
        matches!(r, Err(FormatError::ChecksumMismatch { .. })),
        "{r:?}"
    );
    // A cluster file of the version before levels streamed on their own (2, one
    // checksum over the whole file) is refused by its version.
    let old = file_as(Version::Cooked, &|_| {});
    let r = read(&old);
    assert!(
        matches!(
            r,
            Err(FormatError::WrongVersion {
                found: 2,
                expected: 3
            })
        ),
        "{r:?}"
    );
}

/// A column-major translation by `x` along x.
fn translated_x(x: f32) -> [f32; 16] {
    let mut m = [0.0; 16];
    m[0] = 1.0;
    m[5] = 1.0;
    m[10] = 1.0;
    m[15] = 1.0;
    m[12] = x;
    m
}

/// A manifest written before instances existed still reads, with none; one
/// with instances keeps them.
#[test]
fn cluster_manifests_without_instances_still_read() {
    let old = r#"(name: "rock", bounds_min: (0.0, 0.0, 0.0), bounds_max: (1.0, 1.0, 1.0), levels: [], materials: ["stone"])"#;
    let m: ClusterMeshManifest = ron::from_str(old).unwrap();
    assert!(m.instances.is_empty());
    let text = ron::to_string(&m).unwrap();
    assert!(!text.contains("instances"), "{text}");
    let placed = ClusterMeshManifest {
        instances: vec![translated_x(3.0)],
        ..m
    };
    let back: ClusterMeshManifest = ron::from_str(&ron::to_string(&placed).unwrap()).unwrap();
    assert_eq!(back.instances, placed.instances);
}

/// The error bounds a manifest gives must enclose every cluster's own and parent
/// error sphere in the records (a model's fit is measured from them:
/// `docs/design/region-streaming-and-cluster-lod.md#which-levels-a-model-needs`); a file that
/// claims a smaller sphere, or a non-finite one, is refused.
#[test]
fn error_bounds_that_miss_a_clusters_sphere_are_refused() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (h, c, v, i) = random_level(&mut rng, 6, 200);
    let rec = encode_cluster_level(&h, &c, &v, &i).unwrap();
    let file_with = |bounds: Option<[f32; 4]>| {
        let mut w = FileWriter::new(Version::Streamed);
        let record = w.add_record(RecordTag::CLUSTER_LEVEL, &rec);
        let m = ClusterMeshManifest {
            name: "rock".into(),
            bounds_min: MIN,
            bounds_max: MAX,
            levels: vec![ClusterLevelEntry {
                record,
                max_parent_error: h.max_parent_error,
                triangles: h.triangle_count,
                clusters: h.cluster_count,
                vertices: h.vertex_count,
                bytes: rec.len() as u64,
            }],
            materials: vec!["stone".into(), "moss".into()],
            instances: Vec::new(),
            error_bounds: bounds,
            ..Default::default()
        };
        AlignedBytes::from(&w.finish(&m).unwrap()[..])
    };
    let read = |bytes: &AlignedBytes| Container::<ClusterMeshManifest>::read(bytes).map(|_| ());
    let honest = farsight_format::error_bounds([&c[..]]);
    read(&file_with(Some(honest))).expect("the writer's bounds read");
    read(&file_with(None)).expect("a file from before error bounds reads");
    let mut small = honest;
    small[3] *= 0.9;
    match read(&file_with(Some(small))) {
        Err(FormatError::ManifestDisagrees { field, .. }) => assert_eq!(field, "error_bounds"),
        other => panic!("a sphere too small was accepted: {other:?}"),
    }
    let mut nan = honest;
    nan[1] = f32::NAN;
    assert!(matches!(
        read(&file_with(Some(nan))),
        Err(FormatError::NonFinite { .. })
    ));
}

/// A cluster file of several geometries (a cooked scene): each geometry's levels
/// are its own records, checked against its own error bounds; the placements name
/// geometries that exist and draw every one; a file of several geometries without
/// placements, or with `instances` beside them, is refused.
#[test]
fn a_file_of_several_geometries_checks_each_and_its_placements() {
    use farsight_format::{ClusterGeometryEntry, Instance};
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let (h0, c0, v0, i0) = random_level(&mut rng, 4, 120);
    let (h1, c1, v1, i1) = random_level(&mut rng, 3, 90);
    let r0 = encode_cluster_level(&h0, &c0, &v0, &i0).unwrap();
    let r1 = encode_cluster_level(&h1, &c1, &v1, &i1).unwrap();
    let entry = |record, h: &ClusterLevelHeader, bytes: usize| ClusterLevelEntry {
        record,
        max_parent_error: h.max_parent_error,
        triangles: h.triangle_count,
        clusters: h.cluster_count,
        vertices: h.vertex_count,
        bytes: bytes as u64,
    };
    let place = |geometry, x| Instance {
        geometry,
        transform: translated_x(x),
    };
    let file = |edit: &dyn Fn(&mut ClusterMeshManifest)| {
        let mut w = FileWriter::new(Version::Streamed);
        let a = w.add_record(RecordTag::CLUSTER_LEVEL, &r0);
        let b = w.add_record(RecordTag::CLUSTER_LEVEL, &r1);
        let mut m = ClusterMeshManifest {
            name: "table".into(),
            bounds_min: MIN,
            bounds_max: MAX,
            levels: vec![entry(a, &h0, r0.len())],
            materials: vec!["wood".into()],
            error_bounds: Some(farsight_format::error_bounds([&c0[..]])),
            geometries: vec![ClusterGeometryEntry {
                name: "chair".into(),
                bounds_min: MIN,
                bounds_max: MAX,
                levels: vec![entry(b, &h1, r1.len())],
                materials: vec!["cloth".into()],
                error_bounds: Some(farsight_format::error_bounds([&c1[..]])),
            }],
            placements: vec![place(0, 0.0), place(1, 1.0), place(1, -1.0)],
            ..Default::default()
        };
        edit(&mut m);
        AlignedBytes::from(&w.finish(&m).unwrap()[..])
    };
    let honest = file(&|_| {});
    let read = Container::<ClusterMeshManifest>::read(&honest).unwrap();
    let m = read.manifest();
    assert_eq!(m.geometry_count(), 2);
    let chair = m.geometry(1).unwrap();
    assert_eq!(
        (chair.name, chair.levels[0].triangles),
        ("chair", h1.triangle_count)
    );
    assert!(m.geometry(2).is_none());
    let table = m.all_placements();
    assert_eq!(
        table.iter().map(|p| p.geometry).collect::<Vec<_>>(),
        [0, 1, 1]
    );
    // Round trip of the manifest text; a file of one geometry writes neither field.
    let back: ClusterMeshManifest = ron::from_str(&ron::to_string(m).unwrap()).unwrap();
    assert_eq!(&back, m);
    let one = ClusterMeshManifest {
        geometries: Vec::new(),
        placements: Vec::new(),
        ..m.clone()
    };
    let text = ron::to_string(&one).unwrap();
    assert!(
        !text.contains("geometries") && !text.contains("placements"),
        "{text}"
    );

    let check = |edit: &dyn Fn(&mut ClusterMeshManifest)| {
        Container::<ClusterMeshManifest>::read(&file(edit)).map(|_| ())
    };
    let field = |r: Result<(), FormatError>| match r {
        Err(FormatError::BadField { field, .. }) => field,
        other => panic!("not refused by a field: {other:?}"),
    };
    assert_eq!(field(check(&|m| m.placements.clear())), "placements");
    assert_eq!(
        field(check(&|m| m.instances = vec![translated_x(2.0)])),
        "instances beside placements"
    );
    assert_eq!(
        field(check(&|m| m.placements[2].geometry = 2)),
        "instance geometry"
    );
    assert_eq!(
        field(check(&|m| m.placements.truncate(1))),
        "geometry no instance draws"
    );
    assert!(matches!(
        check(&|m| m.placements[1].transform[13] = f32::NAN),
        Err(FormatError::NonFinite { .. })
    ));
    // Geometry 1's level is checked against geometry 1's own error bounds.
    match check(&|m| {
        let b = m.geometries[0].error_bounds.as_mut().unwrap();
        b[3] *= 0.5;
    }) {
        Err(FormatError::ManifestDisagrees { field, .. }) => assert_eq!(field, "error_bounds"),
        other => panic!("a sphere too small for geometry 1 was accepted: {other:?}"),
    }
    // And its level's copies against its own record.
    match check(&|m| m.geometries[0].levels[0].triangles += 1) {
        Err(FormatError::ManifestDisagrees { field, .. }) => assert_eq!(field, "triangles"),
        other => panic!("geometry 1's lie was accepted: {other:?}"),
    }
}
