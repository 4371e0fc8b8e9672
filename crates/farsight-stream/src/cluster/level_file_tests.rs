//! Levels stored as farsight files: the format reader's check, and the streamer
//! treating a corrupt level like a failed read.

use std::path::PathBuf;
use std::time::Duration;

use farsight_format::{FileWriter, FormatError, RecordTag, Version, NO_PARENT_ERROR};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("farsight-levelfile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn level_file(level: u32, bytes: u64, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let parts = synthetic_level(level, bytes, 10.0, 0.01, NO_PARENT_ERROR, &mut rng);
    encode_level_file("rock", &parts).unwrap()
}

#[test]
fn the_format_reader_accepts_a_level_file_and_refuses_damaged_ones() {
    let good = level_file(2, 40 << 10, 1);
    let summary = check_level_file(&good).unwrap();
    assert_eq!(summary.level, 2);
    assert!(summary.clusters >= 10, "{summary:?}");
    // Unaligned bytes are copied once, not refused.
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&good);
    assert_eq!(check_level_file(&shifted[1..]).unwrap(), summary);
    // Any flipped byte: caught by the container's checksum or structure checks.
    for at in [0, 17, good.len() / 3, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        let e = check_level_file(&bad).unwrap_err();
        assert!(matches!(e, LevelFileError::Format(_)), "byte {at}: {e}");
    }
    let e = check_level_file(&good[..good.len() - 100]).unwrap_err();
    assert!(matches!(e, LevelFileError::Format(_)), "{e}");
    // A valid container whose manifest disagrees with its record.
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let parts = synthetic_level(0, 20 << 10, 5.0, 0.01, 0.02, &mut rng);
    let record = farsight_format::encode_cluster_level(
        &parts.header,
        &parts.clusters,
        &parts.vertices,
        &parts.indices,
    )
    .unwrap();
    let mut w = FileWriter::new(Version::Cooked);
    let index = w.add_record(RecordTag::CLUSTER_LEVEL, &record);
    let mut entry = farsight_format::ClusterLevelEntry {
        record: index,
        max_parent_error: parts.header.max_parent_error,
        triangles: parts.header.triangle_count + 1,
        clusters: parts.header.cluster_count,
        vertices: parts.header.vertex_count,
        bytes: record.len() as u64,
    };
    let manifest = |levels| farsight_format::ClusterMeshManifest {
        name: "rock".into(),
        bounds_min: parts.header.bounds_min,
        bounds_max: parts.header.bounds_max,
        levels,
        materials: vec!["default".into()],
        instances: Vec::new(),
        error_bounds: None,
    };
    let file = w.finish(&manifest(vec![entry.clone()])).unwrap();
    let e = check_level_file(&file).unwrap_err();
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
    entry.triangles -= 1;
    let mut w = FileWriter::new(Version::Cooked);
    w.add_record(RecordTag::CLUSTER_LEVEL, &record);
    let two = vec![entry.clone(), entry];
    let e = check_level_file(&w.finish(&manifest(two)).unwrap()).unwrap_err();
    assert!(matches!(e, LevelFileError::LevelCount { found: 2 }), "{e}");
}

#[test]
fn a_corrupt_level_file_retries_three_times_then_the_coarser_level_is_drawn() {
    let dir = temp_dir("corrupt");
    let mut files = Vec::new();
    let mut models = Vec::new();
    let mut written = Vec::new();
    // Two models of two levels; the finest level spans several chunks.
    for m in 0..2u32 {
        let mut levels = Vec::new();
        for (l, size) in [(0u32, 120u64 << 10), (1, 20 << 10)] {
            let mut bytes = level_file(l, size, (m * 2 + l) as u64);
            if m == 1 && l == 0 {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 1; // one bit, in the second chunk of four
            }
            let path = dir.join(format!("m{m}-l{l}.farsight"));
            std::fs::write(&path, &bytes).unwrap();
            levels.push(LevelDesc {
                file: files.len() as u32,
                offset: 0,
                bytes: bytes.len() as u64,
            });
            files.push(LevelFile { path });
            written.push(bytes);
        }
        models.push(ModelDesc { levels });
    }
    let config = SchedulerConfig {
        upload_budget: 64 << 10,
        chunk_size: 32 << 10,
        ..SchedulerConfig::default()
    };
    let mut s = ClusterStreamer::new(config, &models, files, 2, CpuUploader::default())
        .with_level_check(check_level_file);
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
        Some(&written[0][..]),
        "a good level arrives byte-exact"
    );
    assert_eq!(up.level(1, 1), Some(&written[3][..]));
    assert_eq!(up.level(1, 0), None);
    assert_eq!(s.levels_assembling(), 0, "no chunk buffers are kept");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_level_size_past_the_end_of_its_file_fails_without_allocating_it() {
    let dir = temp_dir("toolong");
    let mut files = Vec::new();
    let mut levels = Vec::new();
    for (l, size) in [(0u32, 120u64 << 10), (1, 20 << 10)] {
        let bytes = level_file(l, size, l as u64);
        let path = dir.join(format!("l{l}.farsight"));
        std::fs::write(&path, &bytes).unwrap();
        levels.push(LevelDesc {
            file: l,
            offset: 0,
            // The finest level claims a gigabyte: its chunks past the file fail
            // their reads, and the one that succeeds finds the file too short
            // before allocating the level.
            bytes: if l == 0 { 1 << 30 } else { bytes.len() as u64 },
        });
        files.push(LevelFile { path });
    }
    let config = SchedulerConfig {
        upload_budget: 64 << 10,
        chunk_size: 64 << 10,
        memory_capacity: u64::MAX,
        ..SchedulerConfig::default()
    };
    let models = [ModelDesc { levels }];
    let mut s = ClusterStreamer::new(config, &models, files, 2, CpuUploader::default())
        .with_level_check(check_level_file);
    let req = [ModelRequest {
        fit: 0,
        keep: 0,
        wanted: 0,
        screen_size: 100.0,
        visible: true,
    }];
    let mut settled = false;
    for _ in 0..5000 {
        s.frame(&req);
        if s.scheduler().is_failed(0, 0) && s.reads_in_flight() == 0 {
            settled = true;
            break;
        }
        s.wait_for_io(Duration::from_millis(2));
    }
    assert!(settled, "the oversized level never failed");
    assert!(s.scheduler().is_resident(0, 1));
    assert_eq!(s.scheduler().drawn_level(0, 0), Some(1));
    assert_eq!(s.levels_assembling(), 0);

    // A size past what chunk indices can count fails at once, without a panic.
    let mut huge = models[0].clone();
    huge.levels[0].bytes = 1 << 50;
    let files = (0..2)
        .map(|l| LevelFile {
            path: dir.join(format!("l{l}.farsight")),
        })
        .collect();
    let mut s = ClusterStreamer::new(config, &[huge], files, 1, CpuUploader::default());
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
    std::fs::remove_dir_all(&dir).unwrap();
}
