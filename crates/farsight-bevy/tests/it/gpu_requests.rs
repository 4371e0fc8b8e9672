//! The GPU path's streamer requests (issue 29, "Measured": the per-frame cost grows
//! only with changed instances): `LevelRequests`' pruned search over each model's
//! instances must give exactly what every instance computed one by one gives
//! (`model_levels_over` and the largest screen size), never a coarser level, over
//! random instances, moves, model changes, removals and cameras. No GPU needed.

use farsight_bevy::gpu::LevelRequests;
use farsight_cluster::{model_levels_over, InstanceBounds, LevelMetric, LevelView};
use farsight_lod::ProjectionInfo;
use farsight_stream::cluster::ModelRequest;
use glam::Vec3;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_bounds(rng: &mut ChaCha8Rng, spread: f32) -> InstanceBounds {
    let scale = rng.random_range(0.05..4.0);
    InstanceBounds {
        center: Vec3::new(
            rng.random_range(-spread..spread),
            rng.random_range(-spread * 0.1..spread * 0.1),
            rng.random_range(-spread..spread),
        ),
        radius: rng.random_range(0.1..2.0) * scale,
        scale,
    }
}

/// What the plugin asked before: every instance's levels, the finest of them.
fn reference(
    metrics: &[Vec<f32>],
    placed: &[Option<(u32, InstanceBounds)>],
    view: &LevelView,
    coarsest: &[u8],
) -> Vec<ModelRequest> {
    (0..metrics.len())
        .map(|m| {
            let mine: Vec<InstanceBounds> = placed
                .iter()
                .flatten()
                .filter(|(pm, _)| *pm as usize == m)
                .map(|&(_, b)| b)
                .collect();
            let mut req = ModelRequest::unseen(coarsest[m]);
            let metric = LevelMetric::ParentErrors(&metrics[m]);
            if let Some(l) = model_levels_over(metric, &mine, view) {
                req.fit = l.fit as u8;
                req.keep = l.keep as u8;
                req.wanted = ModelRequest::wanted_for(l.fit as u8, view.bias as u8, coarsest[m]);
                req.visible = true;
                for b in &mine {
                    let d = (b.center.distance(view.camera) - b.radius).max(1e-3);
                    let px = b.radius * view.viewport_height * 0.5 * view.projection.p11 / d;
                    req.screen_size = req.screen_size.max(px);
                }
            }
            req
        })
        .collect()
}

#[test]
fn gpu_requests_match_the_per_instance_levels() {
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    // Five models of 3 to 8 levels, errors non-decreasing, the coarsest f32::MAX.
    let metrics: Vec<Vec<f32>> = (0..5)
        .map(|m| {
            let n = 3 + m;
            let mut e = rng.random_range(1e-4..1e-3);
            let mut v: Vec<f32> = (0..n - 1)
                .map(|_| {
                    e *= rng.random_range(1.5..3.0);
                    e
                })
                .collect();
            v.push(f32::MAX);
            v
        })
        .collect();
    let coarsest: Vec<u8> = metrics.iter().map(|e| e.len() as u8 - 1).collect();
    let mut levels = LevelRequests::new();
    let mut placed: Vec<Option<(u32, InstanceBounds)>> = Vec::new();
    let mut out = Vec::new();
    let (mut compared, mut finer_than_coarsest) = (0, 0);
    for round in 0..60 {
        // Changes: new instances, moves, model changes, removals at the end.
        let spread = if round % 3 == 0 { 300.0 } else { 40.0 };
        let adds = if round == 0 {
            3000
        } else {
            rng.random_range(0..200)
        };
        for _ in 0..adds {
            let m = rng.random_range(0..metrics.len() as u32);
            let b = random_bounds(&mut rng, spread);
            levels.set(placed.len() as u32, m, b);
            placed.push(Some((m, b)));
        }
        for _ in 0..rng.random_range(0..300) {
            let s = rng.random_range(0..placed.len());
            let m = match placed[s] {
                Some((m, _)) if rng.random_bool(0.8) => m,
                _ => rng.random_range(0..metrics.len() as u32),
            };
            let b = random_bounds(&mut rng, spread);
            levels.set(s as u32, m, b);
            placed[s] = Some((m, b));
        }
        if round % 4 == 3 {
            let len = placed.len() - rng.random_range(0..100);
            levels.truncate(len as u32);
            placed.truncate(len);
        }
        if round % 5 == 4 {
            let s = rng.random_range(0..placed.len());
            levels.clear(s as u32);
            placed[s] = None;
        }
        for cam in 0..10 {
            let projection = if cam == 9 {
                ProjectionInfo {
                    p11: rng.random_range(0.01..1.0),
                    orthographic: true,
                }
            } else {
                ProjectionInfo::perspective(rng.random_range(20f32..100.0).to_radians())
            };
            let view = LevelView {
                // Some cameras inside the instances, some far outside.
                camera: Vec3::new(
                    rng.random_range(-400.0..400.0),
                    rng.random_range(-5.0..60.0),
                    rng.random_range(-400.0..400.0),
                ) * if cam % 2 == 0 { 0.1 } else { 1.0 },
                projection,
                viewport_height: rng.random_range(100.0..2200.0),
                threshold_px: rng.random_range(0.5..2.0),
                bias: rng.random_range(0..3),
            };
            levels.requests(&metrics, &view, |m| coarsest[m as usize], &mut out);
            let want = reference(&metrics, &placed, &view, &coarsest);
            assert_eq!(out, want, "round {round}, camera {cam}: {view:?}");
            compared += 1;
            finer_than_coarsest += want
                .iter()
                .zip(&coarsest)
                .filter(|(r, &c)| r.visible && r.fit < c)
                .count();
        }
    }
    for (m, _) in metrics.iter().enumerate() {
        let n = placed
            .iter()
            .flatten()
            .filter(|p| p.0 as usize == m)
            .count();
        assert_eq!(levels.count(m as u32), n);
    }
    // The cameras must exercise real choices, not only the coarsest level.
    assert!(
        compared == 600 && finer_than_coarsest > 300,
        "{finer_than_coarsest}"
    );
}
