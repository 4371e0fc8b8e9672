//! The cut and the residency levels on hand-built DAGs.

use farsight_cluster::{
    model_levels, model_levels_over, ClusterDag, CutView, DagError, InstanceBounds, LevelMetric,
    LevelView,
};
use farsight_format::ClusterInfo;
use farsight_lod::{pixels_per_unit, ProjectionInfo, REFERENCE_P11};
use glam::Vec3;
use rand::{Rng, SeedableRng};

fn info(
    sphere: [f32; 4],
    error: f32,
    parent_sphere: [f32; 4],
    parent_error: f32,
    group: u32,
) -> ClusterInfo {
    ClusterInfo {
        sphere,
        parent_sphere,
        error,
        parent_error,
        triangle_count: 1,
        material: group as u16 % 3,
        group,
    }
}

/// A strip of 2^k LOD0 clusters along x, merged pairwise per level up to one.
fn strip(k: u32) -> (Vec<Vec<ClusterInfo>>, Vec<f32>) {
    let mut levels = Vec::new();
    let mut errors = Vec::new();
    for l in 0..=k {
        let n = 1u32 << (k - l);
        let width = (1u32 << l) as f32;
        let own_error = if l == 0 {
            0.0
        } else {
            0.01 * (1u32 << (l - 1)) as f32
        };
        let parent_error = if l == k {
            f32::MAX
        } else {
            0.01 * (1u32 << l) as f32
        };
        let mut level = Vec::new();
        for i in 0..n {
            let c = [(i as f32 + 0.5) * width, 0.0, 0.0, width * 0.75];
            let pw = width * 2.0;
            let pi = (i / 2) as f32;
            let p = if l == k {
                c
            } else {
                [(pi + 0.5) * pw, 0.0, 0.0, pw * 0.75]
            };
            level.push(info(c, own_error, p, parent_error, i / 2));
        }
        if l == k {
            level[0].group = 0;
        }
        errors.push(parent_error);
        levels.push(level);
    }
    (levels, errors)
}

fn dag(levels: &[Vec<ClusterInfo>]) -> ClusterDag {
    let refs: Vec<&[ClusterInfo]> = levels.iter().map(Vec::as_slice).collect();
    ClusterDag::from_infos(&refs).unwrap()
}

#[test]
fn cut_covers_the_strip_exactly_once_and_matches_the_flat_walk() {
    let (levels, _) = strip(6);
    let d = dag(&levels);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let (mut cut, mut flat) = (Vec::new(), Vec::new());
    let mut visited_hier = 0u64;
    let mut visited_flat = 0u64;
    for _ in 0..500 {
        let view = CutView {
            camera_local: Vec3::new(
                rng.random_range(-50.0..120.0),
                rng.random_range(0.1..200.0),
                0.0,
            ),
            scale: rng.random_range(0.2..3.0),
            projection: ProjectionInfo::perspective(60f32.to_radians()),
            viewport_height: rng.random_range(200.0..2000.0),
            threshold_px: 1.0,
        };
        let s = d.cut(&view, &mut cut);
        let f = d.cut_flat(&view, &mut flat);
        assert_eq!(cut, flat);
        visited_hier += (s.clusters_visited + s.nodes_visited) as u64;
        visited_flat += f.clusters_visited as u64;
        // Every unit of the strip is covered exactly once.
        let mut cover = vec![0u32; 64];
        for &c in &cut {
            let cl = &d.clusters[c as usize];
            let w = 1usize << cl.level;
            let start = cl.index_in_level as usize * w;
            for x in &mut cover[start..start + w] {
                *x += 1;
            }
        }
        assert!(cover.iter().all(|&x| x == 1), "{cover:?}");
    }
    assert!(
        visited_hier < visited_flat,
        "hierarchy {visited_hier} vs flat {visited_flat}"
    );
}

#[test]
fn each_cluster_keeps_its_records_material() {
    let (levels, _) = strip(4);
    let d = dag(&levels);
    for c in &d.clusters {
        let info = &levels[c.level as usize][c.index_in_level as usize];
        assert_eq!(c.material, u32::from(info.material));
    }
    // The strip's groups use materials 0, 1 and 2 (`info` derives it from the group).
    let used: std::collections::BTreeSet<u32> = d.clusters.iter().map(|c| c.material).collect();
    assert_eq!(used.into_iter().collect::<Vec<_>>(), vec![0, 1, 2]);
}

#[test]
fn malformed_dags_are_refused() {
    let (mut levels, _) = strip(3);
    levels[1][1].error = 1.0;
    let refs: Vec<&[ClusterInfo]> = levels.iter().map(Vec::as_slice).collect();
    assert!(matches!(
        ClusterDag::from_infos(&refs),
        Err(DagError::ErrorNotMonotonic {
            level: 1,
            cluster: 1,
            ..
        })
    ));
    let (mut levels, _) = strip(3);
    levels[0][2].group = 5;
    let refs: Vec<&[ClusterInfo]> = levels.iter().map(Vec::as_slice).collect();
    assert!(matches!(
        ClusterDag::from_infos(&refs),
        Err(DagError::GroupsNotContiguous { level: 0, .. })
    ));
    let (mut levels, _) = strip(3);
    levels[0][1].parent_error *= 0.5;
    let refs: Vec<&[ClusterInfo]> = levels.iter().map(Vec::as_slice).collect();
    assert!(matches!(
        ClusterDag::from_infos(&refs),
        Err(DagError::GroupParentMismatch { level: 0, group: 0 })
    ));
    assert!(matches!(
        ClusterDag::from_infos(&[]),
        Err(DagError::NoLevels)
    ));
}

fn view(camera: Vec3, bias: u32) -> LevelView {
    LevelView {
        camera,
        projection: ProjectionInfo::perspective(60f32.to_radians()),
        viewport_height: 1080.0,
        threshold_px: 1.0,
        bias,
    }
}

#[test]
fn fit_keep_wanted_follow_distance_margin_and_bias() {
    let errors = [0.001f32, 0.002, 0.004, 0.008, 0.016, f32::MAX];
    let inst = InstanceBounds {
        center: Vec3::ZERO,
        radius: 1.0,
        scale: 1.0,
    };
    let mut last_fit = 0;
    for step in 0..400 {
        let d = 1.0 + step as f32 * 0.25;
        let v = view(Vec3::new(0.0, 0.0, d), 2);
        let m = model_levels(LevelMetric::ParentErrors(&errors), &inst, &v);
        assert!(m.keep <= m.fit && m.fit <= m.wanted && m.wanted <= 5);
        assert_eq!(m.wanted, (m.fit + 2).min(5));
        assert!(m.fit >= last_fit, "fit got finer moving away");
        last_fit = m.fit;
        // Brute force: fit is the first level whose error covers more than a pixel.
        let ppu = pixels_per_unit(d - 1.0, v.projection, 1080.0);
        let brute = errors.iter().position(|&e| e * ppu > 1.0).unwrap() as u32;
        assert_eq!(m.fit, brute);
        let brute_keep = errors.iter().position(|&e| e * 1.3 * ppu > 1.0).unwrap() as u32;
        assert_eq!(m.keep, brute_keep);
    }
    assert!(last_fit >= 3);
    // A doubled instance scale reads as twice the error.
    let big = InstanceBounds { scale: 2.0, ..inst };
    let v = view(Vec3::new(0.0, 0.0, 41.0), 0);
    let a = model_levels(LevelMetric::ParentErrors(&errors), &big, &v);
    let b = model_levels(LevelMetric::ParentErrors(&errors), &inst, &v);
    assert!(a.fit <= b.fit);
    // Several instances: the finest answer of each.
    let far = InstanceBounds {
        center: Vec3::new(0.0, 0.0, -500.0),
        ..inst
    };
    let over = model_levels_over(LevelMetric::ParentErrors(&errors), [&far, &inst], &v).unwrap();
    assert_eq!(over, b);
    assert_eq!(
        model_levels_over(LevelMetric::ParentErrors(&errors), [], &v),
        None
    );
}

#[test]
fn distance_fallback_matches_the_visibility_pass_ranges() {
    let distances = [10.0f32, 20.0, 40.0];
    let inst = InstanceBounds {
        center: Vec3::ZERO,
        radius: 0.0,
        scale: 1.0,
    };
    for (d, expected) in [(5.0, 0), (9.99, 0), (15.0, 1), (39.0, 2), (1000.0, 2)] {
        let m = model_levels(
            LevelMetric::Distances(&distances),
            &inst,
            &view(Vec3::new(d, 0.0, 0.0), 1),
        );
        assert_eq!(m.fit, expected, "at {d}");
        assert!(m.keep <= m.fit);
    }
    // Kept 30% further: at 12 the fit is level 1 but level 0 is kept.
    let m = model_levels(
        LevelMetric::Distances(&distances),
        &inst,
        &view(Vec3::new(12.0, 0.0, 0.0), 0),
    );
    assert_eq!((m.fit, m.keep), (1, 0));
    // A narrower field of view holds levels further out.
    let mut v = view(Vec3::new(15.0, 0.0, 0.0), 0);
    v.projection.p11 = REFERENCE_P11 * 2.0;
    assert_eq!(
        model_levels(LevelMetric::Distances(&distances), &inst, &v).fit,
        0
    );
}
