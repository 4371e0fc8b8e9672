//! Background meshing and LOD: real worker threads, serials, grouped publication.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use farsight_terrain::*;
use glam::{IVec3, Vec3};
use rand::{Rng, SeedableRng};

fn hills(max: IVec3) -> VoxelGrid {
    let mut g = VoxelGrid::new();
    let p = TerrainGeneratorConfig {
        base_height: 40.0,
        hill_height: 60.0,
        caves: false,
        ..Default::default()
    };
    generate(&mut g, &p, IVec3::ZERO, max);
    g
}

fn settings(draw: f32) -> TerrainViewConfig {
    TerrainViewConfig {
        draw_distance: draw,
        ..Default::default()
    }
}

/// Every published mesh equals a fresh mesh of `grid` at its level.
fn assert_current(view: &TerrainView, grid: &VoxelGrid) {
    let mut mesher = ChunkMesher::new();
    let mut n = 0;
    for (c, level, mesh) in view.published() {
        let fresh = mesher.mesh(grid, c, level);
        match mesh {
            Some(m) => assert!(**m == fresh, "chunk {c} level {level} is stale"),
            None => assert!(fresh.is_empty(), "chunk {c} lost its mesh"),
        }
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn no_stale_overwrite_under_a_burst_of_edits_from_several_threads() {
    let grid = Arc::new(Mutex::new(hills(IVec3::new(1, 0, 1))));
    let cam = Vec3::new(64.0, 150.0, 64.0);
    let mut view = TerrainView::new(settings(400.0), 2);
    assert!(view.settle(&grid.lock().unwrap(), cam, Duration::from_secs(60)));
    let editors: Vec<_> = (0..3)
        .map(|t| {
            let grid = grid.clone();
            std::thread::spawn(move || {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(t);
                for i in 0..20 {
                    let p = Vec3::new(
                        rng.random_range(20.0..108.0),
                        rng.random_range(40.0..90.0),
                        rng.random_range(20.0..108.0),
                    );
                    let m = if i % 2 == 0 {
                        Material::AIR
                    } else {
                        Material::SAND
                    };
                    grid.lock()
                        .unwrap()
                        .set_sphere(p, rng.random_range(4.0..12.0), m)
                        .unwrap();
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        })
        .collect();
    let mut stale = 0;
    let mut frames = 0;
    while editors.iter().any(|e| !e.is_finished()) {
        let s = view.update(&grid.lock().unwrap(), cam);
        stale += s.stale_dropped;
        frames += 1;
        std::thread::sleep(Duration::from_millis(1));
    }
    for e in editors {
        e.join().unwrap();
    }
    let g = grid.lock().unwrap();
    assert!(view.settle(&g, cam, Duration::from_secs(60)));
    assert_current(&view, &g);
    assert_eq!(view.visible_revision(), g.revision());
    eprintln!("{frames} frames, {stale} stale results dropped");
}

#[test]
fn an_edit_across_chunks_appears_in_one_frame_and_old_meshes_stay_until_then() {
    let mut g = hills(IVec3::new(1, 0, 1));
    let cam = Vec3::new(128.0, 150.0, 128.0);
    let mut view = TerrainView::new(settings(400.0), 2);
    assert!(view.settle(&g, cam, Duration::from_secs(60)));
    let chunks: Vec<IVec3> = (0..4).map(|i| IVec3::new(i & 1, 0, i >> 1)).collect();
    let before: Vec<_> = chunks
        .iter()
        .map(|c| view.mesh(*c).unwrap().clone())
        .collect();
    // A crater right on the corner shared by four chunks.
    let r = g
        .set_sphere(Vec3::new(128.0, 60.0, 128.0), 30.0, Material::AIR)
        .unwrap();
    assert_eq!(r.chunks_changed, 4);
    for frame in 0..5000 {
        view.update(&g, cam);
        let changed = chunks
            .iter()
            .zip(&before)
            .filter(|(c, old)| !Arc::ptr_eq(view.mesh(**c).unwrap(), old))
            .count();
        assert!(
            changed == 0 || changed == 4,
            "frame {frame}: {changed} of 4 chunks show the edit"
        );
        if changed == 4 {
            assert_eq!(view.visible_revision(), g.revision());
            assert_current(&view, &g);
            return;
        }
        assert!(view.visible_revision() < g.revision());
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the edit never became visible");
}

#[test]
fn levels_follow_distance_with_bounded_transitions_and_empty_results_keep_their_level() {
    let mut g = VoxelGrid::new();
    g.set_box(
        Vec3::new(-1100.0, -60.0, -1100.0),
        Vec3::new(1100.0, 50.0, 1100.0),
        Cell::full(Material::GRASS),
    )
    .unwrap();
    let cam = Vec3::new(0.0, 60.0, 0.0);
    let mut view = TerrainView::new(settings(900.0), 2);
    let first = view.update(&g, cam);
    assert!(first.scanned);
    assert_eq!(first.transitions, 48, "at most 48 transitions per scan");
    // Publication takes at most 32 results a frame (no edit group is pending here).
    let start = std::time::Instant::now();
    while view.pending_count() > 0 && start.elapsed() < Duration::from_secs(120) {
        let s = view.update(&g, cam);
        assert!(s.published <= 32, "{} published in one frame", s.published);
        assert!(s.dispatched <= 64);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(view.settle(&g, cam, Duration::from_secs(120)));
    let mut per_level = [0; 4];
    for (c, level, mesh) in view.published() {
        let d = chunk_distance(cam, c);
        let lo = [0.0, 320.0, 720.0, 1500.0][level as usize];
        let hi = [320.0, 720.0, 1500.0, f32::INFINITY][level as usize];
        assert!(d >= lo && d <= hi, "chunk {c} at {d} has level {level}");
        assert!(d <= 900.0 + CHUNK_SIZE, "beyond preload");
        if mesh.is_some() {
            per_level[level as usize] += 1;
        }
    }
    assert!(
        per_level[0] > 0 && per_level[1] > 0 && per_level[2] > 0,
        "{per_level:?}"
    );
    // Settled: no rescan work, and empty chunks (the air above) are not rescheduled.
    let idle = view.update(&g, cam);
    assert_eq!((idle.dispatched, idle.transitions), (0, 0));
    assert!(view.level(IVec3::new(0, 1, 0)).is_some() && view.mesh(IVec3::new(0, 1, 0)).is_none());
    // Small moves do not rescan; 8 units do; crossing a band changes levels.
    assert!(!view.update(&g, cam + Vec3::X * 3.0).scanned);
    assert!(view.update(&g, cam + Vec3::X * 9.0).scanned);
    let far = cam + Vec3::X * 500.0;
    assert!(view.settle(&g, far, Duration::from_secs(120)));
    assert_eq!(view.level(IVec3::new(3, 0, 0)), Some(0));
    assert!(view.level(IVec3::new(-4, 0, 0)).unwrap() >= 1);
    // A pure LOD change keeps the water mesh; chunks beyond retention are dropped.
    assert!(
        view.level(IVec3::new(-8, 0, 0)).is_none(),
        "beyond preload + retention"
    );
}

#[test]
fn an_edited_mesh_outside_preload_range_is_discarded() {
    let mut g = hills(IVec3::new(4, 0, 0));
    let mut view = TerrainView::new(settings(300.0), 2);
    let cam = Vec3::new(64.0, 150.0, 64.0);
    assert!(view.settle(&g, cam, Duration::from_secs(60)));
    let edge = IVec3::new(3, 0, 0);
    assert!(view.mesh(edge).is_some(), "chunk 3 is within preload");
    // Step back so chunk 3 sits in the retention band: kept, not refreshed.
    let back = cam - Vec3::X * 150.0;
    assert!(view.settle(&g, back, Duration::from_secs(60)));
    let d = chunk_distance(back, edge);
    assert!(
        d > 300.0 + CHUNK_SIZE && d <= 300.0 + 2.0 * CHUNK_SIZE,
        "{d}"
    );
    assert!(view.mesh(edge).is_some(), "retained");
    g.set_sphere(Vec3::new(3.5 * CHUNK_SIZE, 60.0, 64.0), 20.0, Material::AIR)
        .unwrap();
    let s = view.update(&g, back);
    assert!(s.discarded >= 1);
    assert!(
        view.mesh(edge).is_none() && view.level(edge).is_none(),
        "no stale mesh can reappear"
    );
}

#[test]
fn a_paused_view_starts_no_batch_and_keeps_its_meshes_until_resumed() {
    let grid = hills(IVec3::new(3, 1, 3));
    let mut view = TerrainView::new(settings(400.0), 1);
    let camera = Vec3::new(48.0, 80.0, 48.0);
    view.set_paused(true);
    for _ in 0..20 {
        let st = view.update(&grid, camera);
        assert_eq!(st.dispatched, 0, "paused: nothing dispatched");
    }
    assert!(view.pending_count() > 0 && view.published().count() == 0);
    view.set_paused(false);
    assert!(view.settle(&grid, camera, Duration::from_secs(60)));
    let meshed = view.published().count();
    assert!(meshed > 0);
    assert_current(&view, &grid);
    // Paused again, a move re-requests levels; the old meshes stay published.
    view.set_paused(true);
    for i in 0..20 {
        view.update(&grid, camera + Vec3::new(0.0, 0.0, 10.0 * i as f32));
    }
    assert_eq!(
        view.published().count(),
        meshed,
        "no mesh dropped while paused"
    );
}
