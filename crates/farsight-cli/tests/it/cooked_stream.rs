//! The file `cook mesh --clusters` writes is what the streamer reads: a corpus mesh
//! cooked, opened as a streamer model from its head, streamed under a small budget
//! to full residency with every level checked on arrival; a truncated file and a
//! level whose bytes fail their checksum.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use farsight_mesh::{cook_file, ClusterConfig, CookKind};
use farsight_stream::cluster::{
    stream_inputs, ClusterStreamer, CookedModel, CookedModelError, CpuUploader, LevelCheck,
    ModelRequest, SchedulerConfig,
};
use farsight_testkit::scratch as temp;

fn corpus(name: &str) -> PathBuf {
    farsight_testkit::mesh(name)
}

fn cook(mesh: &str) -> Vec<u8> {
    let kind = CookKind::Clusters(ClusterConfig::default());
    cook_file(&corpus(mesh), &kind).unwrap().bytes
}

/// Streams `models` wanting every model's finest level until nothing more happens;
/// returns the streamer.
fn stream_all(models: Vec<CookedModel>, budget: u64) -> ClusterStreamer<CpuUploader> {
    let (descs, files) = stream_inputs(&models);
    let config = SchedulerConfig {
        upload_budget: budget,
        chunk_size: budget / 2,
        ..SchedulerConfig::default()
    };
    let n = models.len();
    let check: Arc<dyn LevelCheck> = Arc::new(models);
    let mut s = ClusterStreamer::new(config, &descs, files, 2, CpuUploader::default())
        .with_level_check(check);
    let want = [ModelRequest {
        fit: 0,
        keep: 0,
        wanted: 0,
        screen_size: 100.0,
        visible: true,
    }];
    let requests: Vec<ModelRequest> = want.iter().copied().cycle().take(n).collect();
    let mut quiet = 0;
    for _ in 0..20_000 {
        let st = s.frame(&requests);
        assert!(st.bytes_uploaded <= budget, "frame {}", st.frame);
        let busy = st.levels_loading > 0 || s.reads_in_flight() > 0 || st.reads_issued > 0;
        quiet = if busy { 0 } else { quiet + 1 };
        if quiet > 5 {
            break;
        }
        s.wait_for_io(Duration::from_millis(1));
    }
    s
}

fn level_of<'a>(file: &'a [u8], model: &CookedModel, l: usize) -> &'a [u8] {
    let level = model.level(l).unwrap();
    &file[level.offset as usize..(level.offset + level.bytes) as usize]
}

#[test]
fn a_cooked_corpus_mesh_streams_to_full_residency_level_by_level() {
    let d = temp("full");
    let bytes = cook("bunny.obj");
    let path = d.join("bunny.farsight");
    std::fs::write(&path, &bytes).unwrap();
    let model = CookedModel::open(&path).unwrap();
    let n = model.level_count();
    assert!(n >= 3, "the bunny cooks to several levels: {n}");
    // The model description is the manifest's: levels finest first, the coarsest
    // always drawn, triangles falling, the error bounds around the mesh.
    let errors = model.parent_errors();
    assert_eq!(errors[n - 1], farsight_format::NO_PARENT_ERROR);
    let tris: Vec<u32> = model.levels().map(|l| l.triangles).collect();
    assert!(tris.windows(2).all(|w| w[0] >= w[1]), "{tris:?}");
    let b = model.error_bounds();
    let m = model.manifest();
    for k in 0..3 {
        assert!(b[k] - b[3] <= m.bounds_min[k] && m.bounds_max[k] <= b[k] + b[3]);
    }
    // A budget far under the file: many frames of uploads.
    let budget = (model.total_bytes() / 16).max(4096);
    let s = stream_all(vec![model.clone()], budget);
    let sc = s.scheduler();
    for l in 0..n as u8 {
        assert!(sc.is_resident(0, l), "level {l} resident");
        // What reached the uploader is the level's bytes, checked on arrival.
        assert_eq!(
            s.uploader().level(0, l),
            Some(level_of(&bytes, &model, l as usize))
        );
    }
    assert_eq!(s.read_errors(), 0);
    assert_eq!(sc.drawn_level(0, 0), Some(0));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_level_that_fails_its_checksum_fails_alone_and_a_truncated_cook_does_not_open() {
    let d = temp("bad");
    let bytes = cook("alien.glb");
    let good_path = d.join("alien.farsight");
    std::fs::write(&good_path, &bytes).unwrap();
    let model = CookedModel::open(&good_path).unwrap();
    let n = model.level_count();
    assert!(n >= 2, "{n} levels");
    // One flipped byte inside the finest level: the file still opens, the level
    // fails its check (first read and three retries) and the next one is drawn.
    let mut bad = bytes.clone();
    let l0 = model.level(0).unwrap();
    bad[(l0.offset + l0.bytes / 2) as usize] ^= 0x08;
    let bad_path = d.join("flipped.farsight");
    std::fs::write(&bad_path, &bad).unwrap();
    let flipped = CookedModel::open(&bad_path).unwrap();
    let budget = (model.total_bytes() / 8).max(4096);
    let s = stream_all(vec![model.clone(), flipped.clone()], budget);
    let sc = s.scheduler();
    assert!(sc.is_failed(1, 0), "the flipped level is refused");
    assert_eq!(s.read_errors(), 4);
    assert_eq!(sc.drawn_level(1, 0), Some(1), "the coarser level is drawn");
    for l in 1..n as u8 {
        assert!(
            sc.is_resident(1, l),
            "level {l} of the damaged file streams"
        );
    }
    for l in 0..n as u8 {
        assert!(sc.is_resident(0, l), "the good file streams whole");
    }
    assert_eq!(s.uploader().level(1, 0), None);

    // A truncated cook does not open; the error names the file once.
    let short = d.join("short.farsight");
    std::fs::write(&short, &bytes[..bytes.len() - 1000]).unwrap();
    let e = CookedModel::open(&short).unwrap_err();
    assert!(matches!(e, CookedModelError::Format { .. }), "{e}");
    assert_eq!(e.to_string().matches("short.farsight").count(), 1, "{e}");
    assert!(CookedModel::open(Path::new(&d).join("none.farsight")).is_err());
    std::fs::remove_dir_all(&d).unwrap();
}

/// A cooked scene of several meshes (cakeBirthday: one mesh drawn five times among
/// others) is one file; each geometry opens as its own streamer model from one read
/// of the head, and every level of every geometry streams and passes its check. A
/// geometry past the last is refused by name.
#[test]
fn every_geometry_of_a_cooked_scene_streams_as_its_own_model() {
    let d = temp("cooked-scene");
    let bytes = cook("cakeBirthday.glb");
    let path = d.join("cake.farsight");
    std::fs::write(&path, &bytes).unwrap();
    let models = CookedModel::open_all(&path).unwrap();
    let count = models[0].manifest().geometry_count();
    assert!(count > 1, "cakeBirthday keeps its meshes apart: {count}");
    assert_eq!(models.len(), count);
    for (g, m) in models.iter().enumerate() {
        assert_eq!(m.geometry_index(), g);
        let single = CookedModel::open_geometry(&path, g).unwrap();
        assert_eq!(
            single.levels().collect::<Vec<_>>(),
            m.levels().collect::<Vec<_>>()
        );
    }
    // Geometries' levels are disjoint byte ranges of the one file.
    let mut ranges: Vec<(u64, u64)> = models
        .iter()
        .flat_map(|m| m.levels().map(|l| (l.offset, l.offset + l.bytes)))
        .collect();
    ranges.sort();
    assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "{ranges:?}");
    match CookedModel::open_geometry(&path, count) {
        Err(e @ CookedModelError::NoSuchGeometry { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("cake.farsight") && text.contains(&count.to_string()),
                "{text}"
            );
        }
        other => panic!("geometry {count} opened: {other:?}"),
    }
    let total: u64 = models.iter().map(|m| m.total_bytes()).sum();
    let s = stream_all(models.clone(), (total / 8).max(4096));
    for (g, m) in models.iter().enumerate() {
        for l in 0..m.level_count() as u8 {
            assert!(
                s.scheduler().is_resident(g as u32, l),
                "geometry {g} level {l}"
            );
            assert_eq!(
                s.uploader().level(g as u32, l),
                Some(level_of(&bytes, m, l as usize))
            );
        }
    }
    assert_eq!(s.read_errors(), 0);
    std::fs::remove_dir_all(&d).unwrap();
}
