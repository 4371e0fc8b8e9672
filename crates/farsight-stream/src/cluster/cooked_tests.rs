//! Cooked cluster files as streamer models: opened from the head alone, each level
//! checked on its own, a corrupt level refused while the others stream.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use farsight_format::{FileWriter, FormatError, RecordTag, Version, NO_PARENT_ERROR};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("farsight-cooked-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A cluster file of levels about `sizes` bytes, finest first.
fn cluster_file(sizes: &[u64], seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = sizes.len();
    let levels: Vec<LevelParts> = sizes
        .iter()
        .enumerate()
        .map(|(l, &bytes)| {
            let parent = if l + 1 == n {
                NO_PARENT_ERROR
            } else {
                0.02 * (l + 1) as f32
            };
            synthetic_level(l as u32, bytes, 10.0, 0.01 * l as f32, parent, &mut rng)
        })
        .collect();
    encode_cluster_file("rock", &levels).unwrap()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn level_bytes<'a>(file: &'a [u8], model: &CookedModel, l: usize) -> &'a [u8] {
    let level = model.level(l).unwrap();
    &file[level.offset as usize..(level.offset + level.bytes) as usize]
}

#[test]
fn a_cooked_file_opens_from_its_head_and_each_level_checks_alone() {
    let dir = temp_dir("open");
    let good = cluster_file(&[60 << 10, 30 << 10, 8 << 10], 1);
    let path = write(&dir, "rock.farsight", &good);
    let model = CookedModel::open(&path).unwrap();
    assert_eq!(model.level_count(), 3);
    assert_eq!(model.path(), path);
    let errors = model.parent_errors();
    assert_eq!(errors.len(), 3);
    assert_eq!(errors[2], NO_PARENT_ERROR);
    assert!(errors[0] < errors[1]);
    let desc = model.desc(7);
    let mut end = 0;
    for (l, d) in desc.levels.iter().enumerate() {
        assert_eq!(d.file, 7);
        assert!(d.offset >= end, "levels are disjoint ranges in file order");
        end = d.offset + d.bytes;
        let summary = model.check_level(l, level_bytes(&good, &model, l)).unwrap();
        assert_eq!(summary.level, l as u32);
        assert_eq!(summary.triangles, model.level(l).unwrap().triangles);
        assert!(summary.clusters > 0);
    }
    assert_eq!(end as usize, good.len());
    // The error bounds enclose every level's spheres (checked on each level).
    assert!(model.error_bounds()[3] >= 10.0);

    // A flipped byte inside level 1: the head still opens, level 1 alone fails.
    let mut bad = good.clone();
    let l1 = model.level(1).unwrap();
    bad[(l1.offset + l1.bytes / 2) as usize] ^= 0x40;
    let bad_path = write(&dir, "flipped.farsight", &bad);
    let flipped = CookedModel::open(&bad_path).unwrap();
    for l in 0..3 {
        let r = flipped.check_level(l, level_bytes(&bad, &flipped, l));
        if l == 1 {
            assert!(
                matches!(
                    r,
                    Err(LevelFileError::Format(
                        FormatError::RecordChecksumMismatch { .. }
                    ))
                ),
                "{r:?}"
            );
        } else {
            r.unwrap();
        }
    }
    // A level of the wrong length is refused, and one the checksum passes but whose
    // manifest copy disagrees (written so) too.
    let bytes = level_bytes(&good, &model, 0);
    assert!(model.check_level(0, &bytes[..bytes.len() - 4]).is_err());
    assert!(matches!(
        model.check_level(5, bytes),
        Err(LevelFileError::NoSuchLevel { level: 5, .. })
    ));

    // A truncated file does not open, and says so with the path once.
    let short = write(&dir, "short.farsight", &good[..good.len() - 100]);
    let e = CookedModel::open(&short).unwrap_err();
    assert!(
        matches!(
            e,
            CookedModelError::Format {
                source: FormatError::LengthPastEnd { .. },
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.to_string().matches("short.farsight").count(), 1, "{e}");
    let tiny = write(&dir, "tiny.farsight", &good[..20]);
    assert!(CookedModel::open(&tiny).is_err());
    // A damaged head does not open.
    let mut head = good.clone();
    head[40] ^= 1;
    let head = write(&dir, "head.farsight", &head);
    assert!(matches!(
        CookedModel::open(&head),
        Err(CookedModelError::Format {
            source: FormatError::ChecksumMismatch { .. },
            ..
        })
    ));
    assert!(matches!(
        CookedModel::open(dir.join("missing.farsight")),
        Err(CookedModelError::Io { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_old_cluster_file_is_refused_by_its_version_and_a_lying_manifest_by_the_level_check() {
    let dir = temp_dir("old");
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let parts = synthetic_level(0, 20 << 10, 5.0, 0.01, NO_PARENT_ERROR, &mut rng);
    let record = farsight_format::encode_cluster_level(
        &parts.header,
        &parts.clusters,
        &parts.vertices,
        &parts.indices,
    )
    .unwrap();
    let file = |version, triangles: u32| {
        let mut w = FileWriter::new(version);
        let index = w.add_record(RecordTag::CLUSTER_LEVEL, &record);
        w.finish(&farsight_format::ClusterMeshManifest {
            name: "rock".into(),
            bounds_min: parts.header.bounds_min,
            bounds_max: parts.header.bounds_max,
            levels: vec![farsight_format::ClusterLevelEntry {
                record: index,
                max_parent_error: parts.header.max_parent_error,
                triangles,
                clusters: parts.header.cluster_count,
                vertices: parts.header.vertex_count,
                bytes: record.len() as u64,
            }],
            materials: vec!["default".into()],
            instances: Vec::new(),
            error_bounds: Some(farsight_format::error_bounds([parts.clusters.as_slice()])),
            ..Default::default()
        })
        .unwrap()
    };
    let t = parts.header.triangle_count;
    let old = write(&dir, "old.farsight", &file(Version::Cooked, t));
    let e = CookedModel::open(&old).unwrap_err();
    assert!(
        matches!(
            e,
            CookedModelError::Format {
                source: FormatError::WrongVersion {
                    found: 2,
                    expected: 3
                },
                ..
            }
        ),
        "{e}"
    );
    let lying = file(Version::Streamed, t + 1);
    let path = write(&dir, "lying.farsight", &lying);
    let model = CookedModel::open(&path).unwrap();
    let e = model
        .check_level(0, level_bytes(&lying, &model, 0))
        .unwrap_err();
    assert!(
        matches!(
            e,
            LevelFileError::Format(FormatError::ManifestDisagrees {
                field: "triangles",
                ..
            })
        ),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupt_level_retries_three_times_then_the_coarser_level_is_drawn() {
    let dir = temp_dir("corrupt");
    let mut cooked = Vec::new();
    let mut written = Vec::new();
    // Two models of two levels in one file each; the finest level spans several
    // chunks, and model 1's has one flipped bit in its second chunk of four.
    for m in 0..2u32 {
        let mut bytes = cluster_file(&[120 << 10, 20 << 10], m as u64);
        let path = dir.join(format!("m{m}.farsight"));
        std::fs::write(&path, &bytes).unwrap();
        let model = CookedModel::open(&path).unwrap();
        if m == 1 {
            let l0 = model.level(0).unwrap();
            bytes[(l0.offset + l0.bytes * 3 / 8) as usize] ^= 1;
            std::fs::write(&path, &bytes).unwrap();
        }
        written.push(bytes);
        cooked.push(model);
    }
    let (models, files) = stream_inputs(&cooked);
    let config = SchedulerConfig {
        upload_budget: 64 << 10,
        chunk_size: 32 << 10,
        ..SchedulerConfig::default()
    };
    let check: Arc<dyn LevelCheck> = Arc::new(cooked.clone());
    let mut s = ClusterStreamer::new(config, &models, files, 2, CpuUploader::default())
        .with_level_check(check);
    let want = ModelRequest {
        fit: 0,
        keep: 0,
        wanted: 0,
        screen_size: 100.0,
        visible: true,
    };
    let req = [want; 2];
    let mut failed = Vec::new();
    let mut settled = false;
    for _ in 0..5000 {
        let st = s.frame(&req);
        assert!(st.bytes_uploaded <= config.upload_budget);
        failed.extend(s.last_decisions().iter().filter_map(|d| match *d {
            Decision::Failed { model, level } => Some((model, level)),
            _ => None,
        }));
        let sc = s.scheduler();
        // Holes only while the coarsest levels are on their way.
        if sc.is_resident(0, 1) && sc.is_resident(1, 1) {
            assert_eq!(st.holes, 0, "frame {}", st.frame);
        }
        if sc.is_resident(0, 0) && sc.is_failed(1, 0) && s.reads_in_flight() == 0 {
            settled = true;
            break;
        }
        s.wait_for_io(Duration::from_millis(2));
    }
    assert!(settled, "the streamer did not settle");
    assert_eq!(failed, [(1, 0)], "only the corrupt level fails");
    assert_eq!(s.read_errors(), 4, "the first check and three retries");
    assert_eq!(
        s.scheduler().drawn_level(1, 0),
        Some(1),
        "the coarser level is drawn"
    );
    let up = s.uploader();
    assert_eq!(
        up.level(0, 0),
        Some(level_bytes(&written[0], &cooked[0], 0)),
        "a good level arrives byte-exact"
    );
    assert_eq!(
        up.level(0, 1),
        Some(level_bytes(&written[0], &cooked[0], 1))
    );
    assert_eq!(
        up.level(1, 1),
        Some(level_bytes(&written[1], &cooked[1], 1))
    );
    assert_eq!(up.level(1, 0), None);
    assert_eq!(s.levels_assembling(), 0, "no chunk buffers are kept");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs frames until level 0 of model 0 failed and no read is in flight. The
/// frame count depends on how the I/O threads are scheduled, so the bound is
/// wall time: a minute, far past what a loaded two-core machine needs.
fn until_level_0_fails(s: &mut ClusterStreamer<CpuUploader>, req: &[ModelRequest]) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        s.frame(req);
        if s.scheduler().is_failed(0, 0) && s.reads_in_flight() == 0 {
            return true;
        }
        s.wait_for_io(Duration::from_millis(2));
    }
    false
}

/// Counts the reads that reach the disk, failing none.
#[derive(Default)]
struct CountReads(std::sync::atomic::AtomicU64);

impl crate::io::FaultInjector for CountReads {
    fn should_fail(&self, _: &Path, _: u64) -> bool {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        false
    }
}

#[test]
fn a_level_size_past_the_end_of_its_file_fails_without_allocating_it() {
    let dir = temp_dir("toolong");
    let path = write(&dir, "m.farsight", &cluster_file(&[120 << 10, 20 << 10], 3));
    let cooked = vec![CookedModel::open(&path).unwrap()];
    let (mut models, files) = stream_inputs(&cooked);
    // The finest level claims a gigabyte: its chunks past the file fail their
    // reads, and the one that succeeds finds the file too short before allocating
    // the level.
    models[0].levels[0].bytes = 1 << 30;
    let config = SchedulerConfig {
        upload_budget: 64 << 10,
        chunk_size: 64 << 10,
        memory_capacity: u64::MAX,
        ..SchedulerConfig::default()
    };
    let check: Arc<dyn LevelCheck> = Arc::new(cooked.clone());
    let reads = Arc::new(CountReads::default());
    let mut s = ClusterStreamer::new(config, &models, files.clone(), 2, CpuUploader::default())
        .with_level_check(Arc::clone(&check))
        .with_faults(reads.clone());
    let req = [ModelRequest {
        fit: 0,
        keep: 0,
        wanted: 0,
        screen_size: 100.0,
        visible: true,
    }];
    let settled = until_level_0_fails(&mut s, &req);
    assert!(
        settled,
        "the oversized level never failed and drained ({} reads still in flight)",
        s.reads_in_flight()
    );
    // Once one chunk found the file too short, the level's other 16,383 chunks
    // (and their retries) end without a read.
    let touched = reads.0.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        touched < 1000,
        "{touched} reads reached the disk for a level the file cannot hold"
    );
    assert!(s.scheduler().is_resident(0, 1));
    assert_eq!(s.scheduler().drawn_level(0, 0), Some(1));
    assert_eq!(s.levels_assembling(), 0);

    // A size past what chunk indices can count fails at once, without a panic.
    let mut huge = models[0].clone();
    huge.levels[0].bytes = 1 << 50;
    let mut s = ClusterStreamer::new(config, &[huge], files.clone(), 1, CpuUploader::default());
    let mut failed = false;
    for _ in 0..5000 {
        s.frame(&req);
        failed |= s
            .last_decisions()
            .contains(&Decision::Failed { model: 0, level: 0 });
        if failed && s.scheduler().is_resident(0, 1) {
            break;
        }
        s.wait_for_io(Duration::from_millis(2));
    }
    assert!(failed && s.scheduler().is_resident(0, 1));

    // A level range 16 bytes short of its record (inside the file): read whole,
    // it fails its check alone, and the coarser level is drawn.
    let mut short = cooked[0].desc(0);
    short.levels[0].bytes -= 16;
    let mut s = ClusterStreamer::new(config, &[short], files, 1, CpuUploader::default())
        .with_level_check(check);
    let settled = until_level_0_fails(&mut s, &req);
    assert!(settled, "the mis-sized level never failed");
    assert_eq!(s.scheduler().drawn_level(0, 0), Some(1));
    assert_eq!(s.read_errors(), 4);
    std::fs::remove_dir_all(&dir).unwrap();
}
