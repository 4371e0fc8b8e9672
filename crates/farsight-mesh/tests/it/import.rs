//! Import of the real files: sub-meshes per primitive and material, transforms
//! applied or kept as instances, preparation keeps every triangle.

use crate::common;

use farsight_geom::transform_aabb;
use farsight_mesh::{import, prepare, ImportConfig, TransformMode};

#[test]
fn flight_helmet_transforms_applied_or_kept_as_instances() {
    let path = common::mesh_path("FlightHelmet/FlightHelmet.gltf");
    let applied = import(&path, &ImportConfig::default()).unwrap();
    assert!(applied.instances.is_empty());
    assert_eq!(applied.meshes.len(), 1);
    let kept = import(
        &path,
        &ImportConfig {
            transforms: TransformMode::KeepInstances,
        },
    )
    .unwrap();
    assert!(!kept.instances.is_empty());
    // Same triangles either way.
    let placed: usize = kept
        .instances
        .iter()
        .map(|i| kept.meshes[i.mesh].triangle_count())
        .sum();
    assert_eq!(placed, applied.meshes[0].triangle_count());
    // The applied mesh lies inside the instances' transformed boxes.
    let union = kept
        .instances
        .iter()
        .map(|i| transform_aabb(&i.transform, &kept.meshes[i.mesh].bounds()))
        .reduce(|a, b| a.union(b))
        .unwrap();
    let b = applied.meshes[0].bounds();
    let eps = 1e-4 * union.radius();
    assert!(
        (b.min - union.min).abs().max_element() < eps
            && (b.max - union.max).abs().max_element() < eps
    );
    // One sub-mesh per primitive; preparation merges per material and keeps every
    // triangle, with unique vertices.
    let mesh = &applied.meshes[0];
    let mut materials: Vec<&str> = mesh.submeshes.iter().map(|s| s.material.as_str()).collect();
    materials.sort_unstable();
    materials.dedup();
    let prepared = prepare(mesh);
    assert_eq!(prepared.mesh.submeshes.len(), materials.len());
    assert_eq!(prepared.mesh.triangle_count(), mesh.triangle_count());
    assert!(prepared.mesh.vertex_count() <= mesh.vertex_count());
    assert!(prepared.bounds.contains(&b) && b.contains(&prepared.bounds));
    assert!(mesh.submeshes.iter().all(|s| s.has_tangents));
}

#[test]
fn obj_files_split_by_material_and_report_the_missing_library() {
    let scene = import(&common::mesh_path("pirate.obj"), &ImportConfig::default()).unwrap();
    let mesh = &scene.meshes[0];
    let names: Vec<_> = mesh
        .submeshes
        .iter()
        .map(|s| (s.name.clone(), s.material.clone()))
        .collect();
    assert!(
        mesh.submeshes.len() >= 2,
        "pirate has several materials: {names:?} {:?}",
        scene.warnings
    );
    assert!(scene
        .warnings
        .iter()
        .any(|w| matches!(w, farsight_mesh::Warning::MaterialLibraryUnreadable { .. })));
    let bunny = import(&common::mesh_path("bunny.obj"), &ImportConfig::default()).unwrap();
    assert_eq!(bunny.meshes[0].triangle_count(), 4968);
}

#[test]
fn parallel_cooks_are_independent_ordered_and_deterministic() {
    use farsight_mesh::{cook_file, cook_files, write_atomically, ClusterConfig, CookKind};
    let kind = CookKind::Clusters(ClusterConfig::default());
    let missing = std::env::temp_dir().join("farsight-mesh-definitely-missing.obj");
    let paths = vec![
        common::mesh_path("bunny.obj"),
        missing.clone(),
        common::mesh_path("pirate.obj"),
    ];
    let results = cook_files(&paths, &kind);
    assert_eq!(results.len(), 3);
    assert!(results[1].is_err());
    for i in [0, 2] {
        let alone = cook_file(&paths[i], &kind).unwrap();
        assert_eq!(results[i].as_ref().unwrap().bytes, alone.bytes);
    }
    // A failed cook writes nothing; a good one lands whole under its name.
    let out =
        std::env::temp_dir().join(format!("farsight-mesh-out-{}.farsight", std::process::id()));
    let _ = std::fs::remove_file(&out);
    if let Ok(o) = cook_file(&missing, &kind) {
        write_atomically(&out, &o.bytes).unwrap();
    }
    assert!(!out.exists());
    write_atomically(&out, &results[0].as_ref().unwrap().bytes).unwrap();
    assert_eq!(
        std::fs::read(&out).unwrap(),
        results[0].as_ref().unwrap().bytes
    );
    std::fs::remove_file(&out).unwrap();
}
