//! Headless `App` tests of the cluster model plugin: a corpus mesh cooked as `farsight
//! cook mesh --clusters` does, streamed level by level, drawn from the cut of its
//! resident levels. No window, no GPU.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bevy::asset::AssetPlugin;
use bevy::camera::CameraPlugin;
use bevy::mesh::{Indices, MeshPlugin, VertexAttributeValues};
use bevy::prelude::*;
use bevy::transform::TransformPlugin;
use farsight_bevy::{
    ClusterCut, FarsightClusterConfig, FarsightClusterModel, FarsightClusters, FarsightPlugin,
};
use farsight_format::{AlignedBytes, ClusterLevel, CLUSTER_SLOT_TRIANGLES};
use farsight_mesh::{cook_file, ClusterConfig, CookKind};
use farsight_stream::cluster::{CookedModel, SchedulerConfig};
use farsight_testkit::scratch as temp;

/// `mesh` of the shared corpus cooked into `dir`; returns the file.
fn cook(mesh: &str, dir: &Path) -> PathBuf {
    let src = farsight_testkit::mesh(mesh);
    let kind = CookKind::Clusters(ClusterConfig::default());
    let bytes = cook_file(&src, &kind).unwrap().bytes;
    let path = dir.join(format!("{mesh}.farsight"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// An app whose streamer uploads the coarsest level's bytes per frame: one level at
/// most becomes ready in a frame, the finer ones over several.
fn app(model: &CookedModel) -> App {
    let budget = model.level(model.level_count() - 1).unwrap().bytes;
    let settings = FarsightClusterConfig {
        scheduler: SchedulerConfig {
            upload_budget: budget,
            chunk_size: budget / 2,
            ..SchedulerConfig::default()
        },
        viewport_height: Some(720.0),
        ..FarsightClusterConfig::default()
    };
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        AssetPlugin::default(),
        MeshPlugin,
        TransformPlugin,
        CameraPlugin,
        FarsightPlugin,
    ))
    .insert_resource(FarsightClusters::new(settings));
    app
}

/// The model's centre and radius (its error bounds).
fn bounds(model: &CookedModel) -> (Vec3, f32) {
    let [x, y, z, r] = model.error_bounds();
    (Vec3::new(x, y, z), r)
}

fn place_camera(app: &mut App, cam: Entity, centre: Vec3, distance: f32) {
    let eye = centre + Vec3::new(0.3, 0.2, 1.0).normalize() * distance;
    *app.world_mut().get_mut::<Transform>(cam).unwrap() =
        Transform::from_translation(eye).looking_at(centre, Vec3::Y);
}

/// One frame, with a little time for the readers.
fn frame(app: &mut App) -> ClusterCut {
    app.update();
    app.world()
        .resource::<FarsightClusters>()
        .wait_for_io(Duration::from_millis(2));
    let mut q = app.world_mut().query::<&ClusterCut>();
    q.single(app.world()).unwrap().clone()
}

/// What the mesh draws, checked: every index inside the vertex list, every triangle
/// inside one level's vertices, every level it uses resident now. Returns the area.
fn check_mesh(app: &App, cut: &ClusterCut) -> f32 {
    let clusters = app.world().resource::<FarsightClusters>();
    let m = cut.model.unwrap();
    for &(l, _) in &cut.clusters {
        assert!(
            clusters.is_resident(m, l),
            "the cut draws level {l}, not resident"
        );
    }
    for (l, _) in &cut.vertex_ranges {
        assert!(
            clusters.is_resident(m, *l),
            "the mesh holds level {l}, not resident"
        );
    }
    let meshes = app.world().resource::<Assets<Mesh>>();
    let mesh = meshes.get(cut.mesh.as_ref().unwrap()).unwrap();
    let Some(VertexAttributeValues::Float32x3(p)) = mesh.attribute(Mesh::ATTRIBUTE_POSITION) else {
        panic!("no positions");
    };
    let Some(Indices::U32(idx)) = mesh.indices() else {
        panic!("no u32 indices");
    };
    assert_eq!(idx.len() as u32, cut.triangles * 3);
    let mut area = 0.0;
    for t in idx.chunks_exact(3) {
        let range = cut
            .vertex_ranges
            .iter()
            .find(|(_, r)| r.contains(&t[0]))
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("index {} past the vertices", t[0]));
        assert!(
            range.contains(&t[1]) && range.contains(&t[2]),
            "a triangle across levels"
        );
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| Vec3::from(p[i as usize]));
        area += (b - a).cross(c - a).length() * 0.5;
    }
    area
}

/// The area of each level of a cooked file drawn alone, finest first.
fn level_areas(file: &Path) -> Vec<f32> {
    let model = CookedModel::open(file).unwrap();
    let bytes = std::fs::read(file).unwrap();
    model
        .levels()
        .map(|l| {
            let range = l.offset as usize..(l.offset + l.bytes) as usize;
            let aligned = AlignedBytes::from(&bytes[range]);
            let Ok(level) = ClusterLevel::parse(aligned.as_slice()) else {
                return f32::NAN;
            };
            let h = level.header;
            let p = |i: u32| {
                Vec3::from(
                    level.vertices[i as usize]
                        .unpack(h.bounds_min, h.bounds_max)
                        .position,
                )
            };
            let slot = 3 * CLUSTER_SLOT_TRIANGLES as usize;
            let mut area = 0.0;
            for (c, info) in level.clusters.iter().enumerate() {
                let idx = &level.indices[c * slot..c * slot + 3 * info.triangle_count as usize];
                for t in idx.chunks_exact(3) {
                    let [a, b, c] = [p(t[0]), p(t[1]), p(t[2])];
                    area += (b - a).cross(c - a).length() * 0.5;
                }
            }
            area
        })
        .collect()
}

/// A cut covers the surface once: no hole (less area) and no overlap (more), so its
/// area lies between those of the levels it draws from, each drawn alone.
fn assert_complete(area: f32, cut: &ClusterCut, areas: &[f32]) {
    let (fine, coarse) = cut.level_span().unwrap();
    let span = &areas[fine as usize..=coarse as usize];
    let lo = span.iter().copied().fold(f32::MAX, f32::min);
    let hi = span.iter().copied().fold(0.0, f32::max);
    assert!(
        area >= lo * 0.98 && area <= hi * 1.02,
        "a cut of levels {fine}..={coarse} has area {area}; those levels alone {span:?}"
    );
}

/// Frames until nothing is loading or reading for a few frames.
fn settle(app: &mut App) -> ClusterCut {
    let mut quiet = 0;
    for _ in 0..5000 {
        let cut = frame(app);
        if cut.finest_resident.is_some() {
            check_mesh(app, &cut);
        }
        let busy = app.world().resource::<FarsightClusters>().busy();
        quiet = if busy { 0 } else { quiet + 1 };
        if quiet > 5 {
            return cut;
        }
    }
    panic!("the streamer never settled");
}

#[test]
fn a_cooked_mesh_draws_a_complete_coarse_cut_first_then_finer_and_coarser_far_away() {
    let d = temp("draw");
    let file = cook("bunny.obj", &d);
    let model = CookedModel::open(&file).unwrap();
    let n = model.level_count() as u8;
    assert!(n >= 3, "the bunny cooks to {n} levels");
    let coarsest = model.level(n as usize - 1).unwrap();
    let (centre, radius) = bounds(&model);
    let mut app = app(&model);
    let cam = app.world_mut().spawn(Camera3d::default()).id();
    place_camera(&mut app, cam, centre, 2.5 * radius);
    app.world_mut().spawn(FarsightClusterModel::new(&file));

    // The first cut drawn is the whole coarsest level, alone.
    let mut first = None;
    for _ in 0..2000 {
        let cut = frame(&mut app);
        if cut.finest_resident.is_some() {
            first = Some(cut);
            break;
        }
    }
    let first = first.expect("the coarsest level never arrived");
    assert_eq!(first.finest_resident, Some(n - 1));
    assert_eq!(first.clusters.len() as u32, coarsest.clusters);
    assert_eq!(first.triangles, coarsest.triangles);
    let areas = level_areas(&file);
    assert_complete(check_mesh(&app, &first), &first, &areas);
    let handle = first.mesh.clone().unwrap();

    // Finer as levels arrive: the resident chain only grows while the camera stays,
    // the cut never draws fewer triangles, and every cut covers the surface once
    // (no hole, no overlap: its area is the coarse level's, within simplification).
    let mut last = first.clone();
    let mut finest_seen = n - 1;
    let mut quiet = 0;
    for _ in 0..5000 {
        let cut = frame(&mut app);
        assert_complete(check_mesh(&app, &cut), &cut, &areas);
        let f = cut.finest_resident.unwrap();
        assert!(
            f <= finest_seen,
            "the resident chain shrank: {f} after {finest_seen}"
        );
        finest_seen = f;
        assert!(
            cut.triangles >= last.triangles,
            "the cut coarsened with a still camera"
        );
        assert_eq!(
            cut.mesh.as_ref(),
            Some(&handle),
            "one mesh asset for the instance"
        );
        last = cut;
        let busy = app.world().resource::<FarsightClusters>().busy();
        quiet = if busy { 0 } else { quiet + 1 };
        if quiet > 5 {
            break;
        }
    }
    let (fine, _) = last.level_span().unwrap();
    assert!(finest_seen < n - 1, "no finer level arrived");
    assert!(
        fine < n - 1,
        "near the camera the cut draws finer than the coarsest"
    );
    assert!(last.triangles > first.triangles);
    assert!(last.rebuilds > 1);
    assert_eq!(
        app.world().resource::<Assets<Mesh>>().len(),
        1,
        "no new mesh asset per cut"
    );

    // Far away: coarser, down to the coarsest level alone.
    place_camera(&mut app, cam, centre, 2000.0 * radius);
    let far = settle(&mut app);
    assert_complete(check_mesh(&app, &far), &far, &areas);
    let (far_fine, _) = far.level_span().unwrap();
    assert!(
        far_fine > fine,
        "far away the cut coarsens: {far_fine} after {fine}"
    );
    assert!(far.triangles < last.triangles);
    assert_eq!(far.level_span(), Some((n - 1, n - 1)));
    assert_eq!(far.triangles, coarsest.triangles);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_corrupt_level_is_retried_then_the_coarser_level_stays_drawn() {
    let d = temp("corrupt");
    let file = cook("bunny.obj", &d);
    let model = CookedModel::open(&file).unwrap();
    let n = model.level_count() as u8;
    // One byte in the middle of the finest level: its checksum fails, the head and
    // the other levels are intact.
    let l0 = model.level(0).unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[(l0.offset + l0.bytes / 2) as usize] ^= 0x5a;
    std::fs::write(&file, &bytes).unwrap();
    let model = CookedModel::open(&file).unwrap();
    let (centre, radius) = bounds(&model);
    let mut app = app(&model);
    let cam = app.world_mut().spawn(Camera3d::default()).id();
    // Close enough that the finest level is wanted.
    place_camera(&mut app, cam, centre, 1.2 * radius);
    app.world_mut().spawn(FarsightClusterModel::new(&file));
    let cut = settle(&mut app);
    let clusters = app.world().resource::<FarsightClusters>();
    let m = cut.model.unwrap();
    assert!(clusters.is_failed(m, 0), "level 0 is marked failed");
    assert!(
        clusters.read_errors() >= 3,
        "the bad level was read again: {} failed reads",
        clusters.read_errors()
    );
    for l in 1..n {
        assert!(clusters.is_resident(m, l), "level {l} is resident");
    }
    // The coarser level stands in for the failed one: the cut is complete.
    assert_eq!(cut.finest_resident, Some(1));
    assert_eq!(cut.level_span().map(|s| s.0), Some(1));
    assert_complete(check_mesh(&app, &cut), &cut, &level_areas(&file));
    std::fs::remove_dir_all(&d).unwrap();
}

/// A cooked scene of several meshes (cakeBirthday) spawns one model per placement
/// of its manifest, as children of one root; each geometry is its own streamer
/// model, every instance draws a complete cut of its own geometry's resident
/// levels, and instances of one geometry share its model.
#[test]
fn a_cooked_scene_spawns_a_model_per_placement_and_draws_every_geometry() {
    let d = temp("scene");
    let file = cook("cakeBirthday.glb", &d);
    let model = CookedModel::open(&file).unwrap();
    let manifest = model.manifest().clone();
    let parts = FarsightClusterModel::scene(&file).unwrap();
    let placements = manifest.all_placements();
    assert!(manifest.geometry_count() > 1);
    assert_eq!(parts.len(), placements.len());
    let mut app = app(&model);
    let cam = app.world_mut().spawn(Camera3d::default()).id();
    let (centre, radius) = bounds(&model);
    place_camera(&mut app, cam, centre, 20.0 * radius);
    let root = app.world_mut().spawn(Transform::default()).id();
    for (part, transform) in parts {
        let child = app.world_mut().spawn((part, transform)).id();
        app.world_mut().entity_mut(root).add_child(child);
    }
    let mut quiet = 0;
    for _ in 0..5000 {
        app.update();
        let c = app.world().resource::<FarsightClusters>();
        c.wait_for_io(Duration::from_millis(2));
        quiet = if c.busy() { 0 } else { quiet + 1 };
        if quiet > 5 {
            break;
        }
    }
    assert!(quiet > 5, "the streamer never settled");
    let mut q = app
        .world_mut()
        .query::<(&FarsightClusterModel, &ClusterCut, &GlobalTransform)>();
    let mut model_of = std::collections::HashMap::new();
    let mut drawn = 0;
    for (part, cut, gt) in q.iter(app.world()) {
        let m = cut.model.expect("every part opened");
        assert_eq!(
            *model_of.entry(part.geometry).or_insert(m),
            m,
            "one model per geometry"
        );
        assert!(
            cut.finest_resident.is_some(),
            "geometry {} drew nothing",
            part.geometry
        );
        let clusters = app.world().resource::<FarsightClusters>();
        assert_eq!(
            clusters.models()[m as usize].geometry_index(),
            part.geometry
        );
        assert!(cut.triangles > 0);
        assert!(gt.translation().is_finite());
        check_mesh(&app, cut);
        drawn += 1;
    }
    assert_eq!(drawn, placements.len());
    assert_eq!(model_of.len(), manifest.geometry_count());
    std::fs::remove_dir_all(&d).unwrap();
}

/// The coarsest level is read when the model is opened: an instance draws the
/// whole coarsest level on its very first frame, before any streamed read could
/// have finished, and keeps drawing it when another model opens (the streamer is
/// rebuilt then).
#[test]
fn a_new_instance_draws_its_coarsest_level_on_its_first_frame() {
    let d = temp("first-frame");
    let file = cook("bunny.obj", &d);
    let model = CookedModel::open(&file).unwrap();
    let n = model.level_count() as u8;
    let coarsest = model.level(n as usize - 1).unwrap();
    let (centre, radius) = bounds(&model);
    let mut app = app(&model);
    let cam = app.world_mut().spawn(Camera3d::default()).id();
    place_camera(&mut app, cam, centre, 2.5 * radius);
    let e = app.world_mut().spawn(FarsightClusterModel::new(&file)).id();
    app.update();
    let cut = app.world().get::<ClusterCut>(e).unwrap().clone();
    assert_eq!(cut.finest_resident, Some(n - 1), "nothing drawn on frame 1");
    assert_eq!(cut.triangles, coarsest.triangles);
    assert!(app.world().get::<Mesh3d>(e).is_some(), "no mesh on frame 1");
    let areas = level_areas(&file);
    assert_complete(check_mesh(&app, &cut), &cut, &areas);

    // A second model restarts the streamer: the first still draws, and the new
    // one draws its own coarsest level in the frame it was spawned.
    let other = cook("alien.glb", &d);
    let e2 = app
        .world_mut()
        .spawn((
            FarsightClusterModel::new(&other),
            Transform::from_xyz(0.0, 0.0, -1.0),
        ))
        .id();
    app.update();
    for e in [e, e2] {
        let cut = app.world().get::<ClusterCut>(e).unwrap().clone();
        assert!(
            cut.finest_resident.is_some(),
            "{e} drew nothing after a restart"
        );
        assert!(cut.triangles > 0);
        check_mesh(&app, &cut);
    }
    std::fs::remove_dir_all(&d).unwrap();
}
