//! Section 6 of issue 6 for the cluster streamer: budget, eviction timing, bias,
//! retries and fallback, replay.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::io::FaultInjector;

/// A visible model that wants its finest level.
const FINEST: ModelRequest = ModelRequest {
    fit: 0,
    keep: 0,
    wanted: 0,
    screen_size: 1.0,
    visible: true,
};

const KB: u64 = 1024;
const MB: u64 = 1024 * KB;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("farsight-stream-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn level_byte(model: u32, level: u8, i: u64) -> u8 {
    (model as u64 * 131 + level as u64 * 29 + i * 7 + i / 251) as u8
}

/// Writes one file per model holding its levels back to back (finest first) and
/// returns the descriptions.
fn write_models(dir: &Path, sizes: &[Vec<u64>]) -> (Vec<ModelDesc>, Vec<LevelFile>) {
    let mut models = Vec::new();
    let mut files = Vec::new();
    for (m, levels) in sizes.iter().enumerate() {
        let mut bytes = Vec::new();
        let mut descs = Vec::new();
        for (l, &n) in levels.iter().enumerate() {
            descs.push(LevelDesc {
                file: m as u32,
                offset: bytes.len() as u64,
                bytes: n,
            });
            bytes.extend((0..n).map(|i| level_byte(m as u32, l as u8, i)));
        }
        let path = dir.join(format!("model{m}.bin"));
        std::fs::write(&path, &bytes).unwrap();
        files.push(LevelFile { path });
        models.push(ModelDesc { levels: descs });
    }
    (models, files)
}

fn run_until(
    s: &mut ClusterStreamer<CpuUploader>,
    req: &[ModelRequest],
    mut done: impl FnMut(&ClusterStreamer<CpuUploader>) -> bool,
    budget: u64,
) -> Vec<FrameStats> {
    let mut stats = Vec::new();
    for _ in 0..5000 {
        let st = s.frame(req);
        assert!(
            st.bytes_uploaded <= budget,
            "frame {} uploaded {}",
            st.frame,
            st.bytes_uploaded
        );
        stats.push(st);
        if done(s) {
            return stats;
        }
        s.wait_for_io(Duration::from_millis(2));
    }
    panic!("did not settle in 5000 frames");
}

#[test]
fn real_reads_arrive_byte_exact_and_never_exceed_the_budget() {
    let dir = temp_dir("budget");
    // 12 models, 4 levels each, some larger than a chunk and than the budget.
    let sizes: Vec<Vec<u64>> = (0..12)
        .map(|m| vec![3 * MB + m * 77 * KB, 900 * KB + m, 200 * KB, 9 * KB + m])
        .collect();
    let (models, files) = write_models(&dir, &sizes);
    let config = SchedulerConfig {
        upload_budget: 2 * MB,
        chunk_size: MB,
        staging_size: 6 * MB,
        ..SchedulerConfig::default()
    };
    let mut s = ClusterStreamer::new(config, &models, files, 2, CpuUploader::default());
    let req: Vec<_> = (0..12)
        .map(|m| ModelRequest {
            fit: 0,
            keep: 0,
            wanted: 0,
            screen_size: m as f32,
            visible: true,
        })
        .collect();
    let stats = run_until(
        &mut s,
        &req,
        |s| (0..12).all(|m| s.scheduler().is_resident(m, 0)),
        config.upload_budget,
    );
    assert!(
        stats.iter().any(|s| s.bytes_uploaded > MB),
        "the budget was used"
    );
    assert!(s.uploader().max_frame_bytes <= config.upload_budget);
    for (m, levels) in sizes.iter().enumerate() {
        for (l, &n) in levels.iter().enumerate() {
            let got = s.uploader().level(m as u32, l as u8).expect("level ready");
            assert_eq!(got.len() as u64, n);
            assert!(
                got.iter()
                    .enumerate()
                    .all(|(i, &b)| b == level_byte(m as u32, l as u8, i as u64)),
                "model {m} level {l} bytes differ"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Fails every read of one file at one offset `times` times.
struct FailAt {
    path: PathBuf,
    offset: u64,
    left: AtomicU32,
    seen: AtomicU32,
}

impl FaultInjector for FailAt {
    fn should_fail(&self, path: &Path, offset: u64) -> bool {
        if path == self.path && offset == self.offset {
            self.seen.fetch_add(1, Ordering::SeqCst);
            return self
                .left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        }
        false
    }
}

#[test]
fn an_injected_io_error_retries_three_times_then_falls_back() {
    let dir = temp_dir("retry");
    let sizes = vec![
        vec![40 * KB, 20 * KB, 10 * KB],
        vec![40 * KB, 20 * KB, 10 * KB],
    ];
    let (models, files) = write_models(&dir, &sizes);
    let config = SchedulerConfig::default();
    let req = vec![FINEST; 2];

    // Three failures: the fourth attempt succeeds.
    let fault = Arc::new(FailAt {
        path: files[0].path.clone(),
        offset: models[0].levels[1].offset,
        left: AtomicU32::new(3),
        seen: AtomicU32::new(0),
    });
    let mut s = ClusterStreamer::new(config, &models, files.clone(), 2, CpuUploader::default())
        .with_faults(fault.clone());
    run_until(
        &mut s,
        &req,
        |s| s.scheduler().is_resident(0, 0) && s.scheduler().is_resident(0, 1),
        config.upload_budget,
    );
    assert_eq!(
        fault.seen.load(Ordering::SeqCst),
        4,
        "three retries after the first failure"
    );
    assert!(!s.scheduler().is_failed(0, 1));

    // Four failures: level 1 fails, level 0 never starts, level 2 is drawn.
    let fault = Arc::new(FailAt {
        path: files[0].path.clone(),
        offset: models[0].levels[1].offset,
        left: AtomicU32::new(u32::MAX),
        seen: AtomicU32::new(0),
    });
    let mut s = ClusterStreamer::new(config, &models, files, 2, CpuUploader::default())
        .with_faults(fault.clone());
    run_until(
        &mut s,
        &req,
        |s| s.scheduler().is_failed(0, 1) && s.scheduler().is_resident(1, 0),
        config.upload_budget,
    );
    for _ in 0..10 {
        s.frame(&req);
        s.wait_for_io(Duration::from_millis(1));
    }
    assert_eq!(
        fault.seen.load(Ordering::SeqCst),
        4,
        "no read after the level failed"
    );
    let sch = s.scheduler();
    assert!(sch.is_failed(0, 1));
    assert!(
        !sch.is_resident(0, 0) && !sch.is_loading(0, 0),
        "finer than a failed level"
    );
    assert_eq!(sch.drawn_level(0, 0), Some(2), "the coarser level is drawn");
    assert_eq!(sch.drawn_level(1, 0), Some(0), "other models are untouched");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_level_that_fails_part_way_frees_the_chunks_it_copied() {
    let dir = temp_dir("partial-failure");
    // Level 0 takes three 8 MB reads; its second always fails, after the first was
    // copied to the renderer.
    let sizes = vec![vec![20 * MB, 64 * KB]];
    let (models, files) = write_models(&dir, &sizes);
    let config = SchedulerConfig::default();
    let fault = Arc::new(FailAt {
        path: files[0].path.clone(),
        offset: models[0].levels[0].offset + config.effective_chunk(),
        left: AtomicU32::new(u32::MAX),
        seen: AtomicU32::new(0),
    });
    let mut s = ClusterStreamer::new(config, &models, files, 2, CpuUploader::default())
        .with_faults(fault.clone());
    let req = [FINEST];
    let mut copied_part = false;
    for _ in 0..5000 {
        s.frame(&req);
        copied_part |= s.uploader().held_levels() == 2;
        if s.scheduler().is_failed(0, 0) {
            break;
        }
        s.wait_for_io(Duration::from_millis(2));
    }
    assert!(s.scheduler().is_failed(0, 0), "the level failed");
    assert!(copied_part, "some of the level was copied before it failed");
    assert_eq!(fault.seen.load(Ordering::SeqCst), 4);
    assert_eq!(
        s.uploader().held_levels(),
        1,
        "only the coarsest level is held: the failed level's chunks were freed"
    );
    assert!(s.uploader().level(0, 1).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_coarsest_level_is_never_drawn() {
    let models = vec![ModelDesc {
        levels: vec![
            LevelDesc {
                file: 0,
                offset: 0,
                bytes: 100,
            },
            LevelDesc {
                file: 0,
                offset: 100,
                bytes: 50,
            },
        ],
    }];
    let mut s = ClusterScheduler::new(SchedulerConfig::default(), &models);
    let req = [FINEST];
    let mut out = Vec::new();
    let mut failures = 0;
    let mut pending = Vec::new();
    for _ in 0..20 {
        out.clear();
        let st = s.step(&req, &pending, &mut out);
        failures += st.failures;
        assert_eq!(st.holes, 1);
        pending = out
            .iter()
            .filter_map(|d| match d {
                Decision::Read { request, .. } => Some(ChunkCompletion {
                    request: *request,
                    ok: false,
                }),
                _ => None,
            })
            .collect();
    }
    assert_eq!(failures, 1);
    assert!(s.is_failed(0, 1));
    assert!(!s.is_loading(0, 0) && !s.is_resident(0, 0));
    assert_eq!(s.drawn_level(0, 0), None);
}

/// Steps `s` and completes every read at once (no I/O): the pure scheduler.
fn step_instant(
    s: &mut ClusterScheduler,
    req: &[ModelRequest],
    pending: &mut Vec<ChunkCompletion>,
    out: &mut Vec<Decision>,
) -> FrameStats {
    out.clear();
    let st = s.step(req, pending, out);
    pending.clear();
    pending.extend(out.iter().filter_map(|d| match d {
        Decision::Read { request, .. } => Some(ChunkCompletion {
            request: *request,
            ok: true,
        }),
        _ => None,
    }));
    st
}

#[test]
fn eviction_happens_exactly_at_the_60th_frame_and_never_breaks_the_chain() {
    let models = vec![ModelDesc {
        levels: (0..4)
            .map(|l| LevelDesc {
                file: 0,
                offset: l * 1000,
                bytes: 1000,
            })
            .collect(),
    }];
    let mut s = ClusterScheduler::new(SchedulerConfig::default(), &models);
    let near = [ModelRequest {
        fit: 0,
        keep: 0,
        wanted: 0,
        screen_size: 9.0,
        visible: true,
    }];
    let far = [ModelRequest {
        fit: 3,
        keep: 3,
        wanted: 3,
        screen_size: 1.0,
        visible: true,
    }];
    let (mut pending, mut out) = (Vec::new(), Vec::new());
    let mut ready_at = [None; 4];
    while ready_at[0].is_none() {
        let f = s.frame();
        step_instant(&mut s, &near, &mut pending, &mut out);
        for d in &out {
            if let Decision::Ready { level, .. } = d {
                ready_at[*level as usize] = Some(f);
            }
        }
    }
    // Level 0 became ready at frame r0; the camera leaves at once: nobody asks for
    // levels 0..=2 any more. Level 0 goes at r0 + 60, never earlier.
    let r0 = ready_at[0].unwrap();
    let mut evicted_at = [None; 4];
    for _ in 0..200 {
        let f = s.frame();
        step_instant(&mut s, &far, &mut pending, &mut out);
        for d in &out {
            if let Decision::Evict { level, .. } = d {
                evicted_at[*level as usize] = Some(f);
                // The chain: no level is evicted while a finer one stays.
                for finer in 0..*level {
                    assert!(
                        !s.is_resident(0, finer),
                        "level {level} left before {finer}"
                    );
                }
            }
        }
    }
    assert_eq!(evicted_at[0], Some(r0 + 60));
    // Coarser levels became resident earlier, so they are old enough the same frame.
    assert_eq!(evicted_at[1], Some(r0 + 60));
    assert_eq!(evicted_at[2], Some(r0 + 60));
    assert_eq!(evicted_at[3], None, "the coarsest level is never evicted");
    assert!(s.is_resident(0, 3));
}

#[test]
fn a_level_still_asked_for_is_never_evicted_and_keep_protects_finer_levels() {
    let models = vec![ModelDesc {
        levels: (0..3)
            .map(|l| LevelDesc {
                file: 0,
                offset: l * 100,
                bytes: 100,
            })
            .collect(),
    }];
    let mut s = ClusterScheduler::new(SchedulerConfig::default(), &models);
    let (mut pending, mut out) = (Vec::new(), Vec::new());
    let all = [FINEST];
    for _ in 0..10 {
        step_instant(&mut s, &all, &mut pending, &mut out);
    }
    // Fit moved to 1, but keep (the 30% margin) still covers level 0.
    let margin = [ModelRequest {
        fit: 1,
        keep: 0,
        wanted: 1,
        screen_size: 1.0,
        visible: true,
    }];
    for _ in 0..300 {
        step_instant(&mut s, &margin, &mut pending, &mut out);
        assert!(!out.iter().any(|d| matches!(d, Decision::Evict { .. })));
    }
    assert!(s.is_resident(0, 0));
}

fn pressure_world(n: usize) -> Vec<ModelDesc> {
    (0..n)
        .map(|m| ModelDesc {
            levels: (0..5)
                .map(|l| LevelDesc {
                    file: 0,
                    offset: (m * 5 + l) as u64 * MB,
                    bytes: MB >> l,
                })
                .collect(),
        })
        .collect()
}

#[test]
fn the_bias_rises_under_pressure_and_falls_after_calm_frames_then_settles() {
    let models = pressure_world(400);
    let config = SchedulerConfig {
        upload_budget: 2 * MB,
        ..SchedulerConfig::default()
    };
    let mut s = ClusterScheduler::new(config, &models);
    let (mut pending, mut out) = (Vec::new(), Vec::new());
    let mut history = Vec::new();
    // Every model wants its finest level (plus the bias): 400 * ~2 MB against
    // 2 MB per frame keeps the budget exhausted.
    for frame in 0..4000u32 {
        let fit = if frame < 1200 { 0 } else { 4 };
        let bias = s.bias();
        let req: Vec<_> = (0..models.len())
            .map(|m| ModelRequest {
                fit,
                keep: fit,
                wanted: ModelRequest::wanted_for(fit, bias, 4),
                screen_size: m as f32,
                visible: true,
            })
            .collect();
        let st = step_instant(&mut s, &req, &mut pending, &mut out);
        history.push((
            st.bias,
            st.budget_exhausted || st.staging_full || st.memory_full,
        ));
    }
    // Rises one step per 120 pressured frames.
    let first_one = history.iter().position(|h| h.0 == 1).unwrap();
    assert_eq!(first_one, 119, "bias 1 after 120 frames of pressure");
    assert!(history.iter().all(|h| h.0 <= 4));
    let max = history.iter().map(|h| h.0).max().unwrap();
    assert!(max >= 2, "pressure long enough to climb further");
    // Each step is exactly one.
    for w in history.windows(2) {
        assert!((w[0].0 as i32 - w[1].0 as i32).abs() <= 1);
    }
    // After the load is gone the bias falls one step per 120 calm frames to 0 and stays.
    let last_change = history.windows(2).rposition(|w| w[0].0 != w[1].0).unwrap();
    assert_eq!(history.last().unwrap().0, 0);
    assert!(last_change < 3000, "settled well before the end");
    let calm_start = history.iter().rposition(|h| h.1).unwrap() + 1;
    let mut b = history[calm_start - 1].0;
    for (i, h) in history[calm_start..].iter().enumerate() {
        if (i + 1) % 120 == 0 && b > 0 {
            b -= 1;
        }
        assert_eq!(h.0, b, "calm frame {i}");
    }
}

#[test]
fn the_bias_changes_what_loads_never_what_is_kept() {
    let models = pressure_world(1);
    let mut s = ClusterScheduler::new(SchedulerConfig::default(), &models);
    let (mut pending, mut out) = (Vec::new(), Vec::new());
    let r = |wanted| {
        [ModelRequest {
            fit: 0,
            keep: 0,
            wanted,
            screen_size: 1.0,
            visible: true,
        }]
    };
    for _ in 0..20 {
        step_instant(&mut s, &r(0), &mut pending, &mut out);
    }
    assert!(s.is_resident(0, 0));
    // A biased `wanted` of 2 with `keep` still 0: nothing is evicted.
    for _ in 0..200 {
        step_instant(&mut s, &r(2), &mut pending, &mut out);
        assert!(!out.iter().any(|d| matches!(d, Decision::Evict { .. })));
    }
    assert!(s.is_resident(0, 0));
}

#[test]
fn replaying_a_recorded_run_gives_identical_decisions() {
    let dir = temp_dir("replay");
    let sizes: Vec<Vec<u64>> = (0..30)
        .map(|m| vec![300 * KB + m * KB, 100 * KB, 20 * KB])
        .collect();
    let (models, files) = write_models(&dir, &sizes);
    let config = SchedulerConfig {
        upload_budget: 512 * KB,
        chunk_size: 128 * KB,
        staging_size: 1536 * KB,
        ..SchedulerConfig::default()
    };
    let fault = Arc::new(FailAt {
        path: files[3].path.clone(),
        offset: 0,
        left: AtomicU32::new(2),
        seen: AtomicU32::new(0),
    });
    let mut s =
        ClusterStreamer::new(config, &models, files, 2, CpuUploader::default()).with_faults(fault);
    s.record();
    for f in 0..300u32 {
        let req: Vec<_> = (0..30u32)
            .map(|m| {
                let fit = ((f / 40 + m) % 3) as u8;
                ModelRequest {
                    fit,
                    keep: fit.saturating_sub(1),
                    wanted: fit,
                    screen_size: ((m * 7 + f) % 13) as f32,
                    visible: true,
                }
            })
            .collect();
        s.frame(&req);
        s.wait_for_io(Duration::from_micros(300));
    }
    let rec = s.take_recording();
    assert!(rec.iter().any(|r| r
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::Evict { .. }))));
    let mut replay = ClusterScheduler::new(config, &models);
    let mut out = Vec::new();
    for (i, r) in rec.iter().enumerate() {
        out.clear();
        replay.step(&r.requests, &r.completions, &mut out);
        assert_eq!(out, r.decisions, "frame {i}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_model_with_no_level_or_too_many_is_refused_with_its_count() {
    let level = LevelDesc {
        file: 0,
        offset: 0,
        bytes: 64,
    };
    let good = ModelDesc {
        levels: vec![level; 3],
    };
    let empty = ModelDesc { levels: vec![] };
    let too_many = ModelDesc {
        levels: vec![level; MAX_LEVELS + 1],
    };
    let config = SchedulerConfig::default();
    assert!(ClusterScheduler::try_new(config, std::slice::from_ref(&good)).is_ok());
    assert_eq!(
        ClusterScheduler::try_new(config, &[good.clone(), empty]).unwrap_err(),
        ModelDescError::LevelCount {
            model: 1,
            levels: 0
        }
    );
    let e = ClusterScheduler::try_new(config, &[too_many, good]).unwrap_err();
    assert_eq!(
        e,
        ModelDescError::LevelCount {
            model: 0,
            levels: MAX_LEVELS + 1
        }
    );
    assert!(e.to_string().contains("33 levels"), "{e}");
}

/// docs/design/region-streaming-and-cluster-lod.md#streaming-under-a-budget: a model with no resident coarsest level comes before any finer level of
/// any model, even when the budget runs out part way through the first model's chain.
#[test]
fn every_missing_coarsest_level_starts_before_any_finer_level() {
    let models: Vec<ModelDesc> = (0..3u64)
        .map(|m| ModelDesc {
            levels: (0..4u64)
                .map(|l| LevelDesc {
                    file: 0,
                    offset: (m * 4 + l) * 1000,
                    bytes: 1000,
                })
                .collect(),
        })
        .collect();
    let config = SchedulerConfig {
        upload_budget: 3500,
        ..SchedulerConfig::default()
    };
    let mut s = ClusterScheduler::new(config, &models);
    let (mut pending, mut out) = (Vec::new(), Vec::new());
    // Model 0 is the biggest on screen: without the rule its finer levels start
    // ahead of the other models' coarsest.
    let req: Vec<_> = (0..3)
        .map(|m| ModelRequest {
            screen_size: 3.0 - m as f32,
            ..FINEST
        })
        .collect();
    step_instant(&mut s, &req, &mut pending, &mut out);
    let started: Vec<(u32, u8)> = out
        .iter()
        .filter_map(|d| match *d {
            Decision::Read {
                model,
                level,
                chunk: 0,
                ..
            } => Some((model, level)),
            _ => None,
        })
        .collect();
    assert_eq!(
        &started[..3],
        &[(0, 3), (1, 3), (2, 3)],
        "the coarsest of every model first: {started:?}"
    );
    assert_eq!(started.len(), 3, "the budget then ran out: {started:?}");
}

#[test]
fn budgets_set_per_frame_bound_that_frame_and_the_chunk_size_stays() {
    let models = pressure_world(40);
    let config = SchedulerConfig {
        upload_budget: 4 * MB,
        chunk_size: 256 * KB,
        memory_capacity: 64 * MB,
        ..SchedulerConfig::default()
    };
    let mut s = ClusterScheduler::new(config, &models);
    let req = vec![FINEST; models.len()];
    let (mut pending, mut out) = (Vec::new(), Vec::new());
    // The pool's share changes every frame; no frame uploads more than its share,
    // and nothing is held past the capacity of the frame that started it.
    let shares = [0, 256 * KB, MB, 3 * MB, 512 * KB];
    let mut uploaded = 0;
    for f in 0..200usize {
        let (upload, memory) = (shares[f % shares.len()], 8 * MB + f as u64 * 64 * KB);
        s.set_budgets(upload, memory);
        let st = step_instant(&mut s, &req, &mut pending, &mut out);
        assert!(
            st.bytes_uploaded <= upload,
            "frame {f}: {}",
            st.bytes_uploaded
        );
        assert!(
            s.held_bytes() <= memory,
            "frame {f}: {} held",
            s.held_bytes()
        );
        uploaded += st.bytes_uploaded;
    }
    assert_eq!(s.chunk_size(), 256 * KB, "chunks as created");
    assert!(uploaded > 8 * MB, "levels streamed in: {uploaded}");
    // A zero share copies nothing.
    s.set_budgets(0, 64 * MB);
    let st = step_instant(&mut s, &req, &mut pending, &mut out);
    assert_eq!(st.bytes_uploaded, 0);
}
