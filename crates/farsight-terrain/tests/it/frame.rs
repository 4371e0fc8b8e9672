//! Per-frame rules of `TerrainView`: publication takes at most 32 results and stops
//! once its budget has passed (checked between results, measured with an injected
//! clock), and scans run on 8 units of camera movement or a new draw distance.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use farsight_terrain::*;
use glam::Vec3;

fn flat_world() -> VoxelGrid {
    let mut g = VoxelGrid::new();
    g.set_box(
        Vec3::new(-300.0, -60.0, -300.0),
        Vec3::new(428.0, 50.0, 428.0),
        Cell::full(Material::GRASS),
    )
    .unwrap();
    g
}

/// A clock that advances `step` every time it is read.
fn ticking(step: Duration) -> (Clock, Arc<AtomicU64>) {
    let reads = Arc::new(AtomicU64::new(0));
    let r = reads.clone();
    let clock = Clock::new(move || step * r.fetch_add(1, Ordering::SeqCst) as u32);
    (clock, reads)
}

/// A view whose finished results all wait for publication (`publish_max` 0 while
/// the workers run), with more than 32 of them.
fn view_with_ready_results(grid: &VoxelGrid, cam: Vec3) -> TerrainView {
    let settings = TerrainViewConfig {
        draw_distance: 500.0,
        publish_max: 0,
        ..Default::default()
    };
    let mut view = TerrainView::new(settings, 2);
    let start = Instant::now();
    loop {
        let s = view.update(grid, cam);
        assert_eq!(s.published, 0);
        if view.pending_count() > 0 && view.ready_count() == view.pending_count() && !s.scanned {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "workers stalled"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(view.ready_count() > 40, "{} ready", view.ready_count());
    view.settings.publish_max = 32;
    view
}

#[test]
fn publication_takes_at_most_32_results_a_frame() {
    let grid = flat_world();
    let cam = Vec3::new(64.0, 100.0, 64.0);
    let mut view = view_with_ready_results(&grid, cam);
    // A clock that never moves: only the count limits the frame.
    view.set_clock(Clock::new(|| Duration::ZERO));
    let ready = view.ready_count();
    let s = view.update(&grid, cam);
    assert_eq!(s.published, 32);
    assert_eq!(view.ready_count(), ready - 32);
    assert_eq!(s.publish_time, Duration::ZERO);
    // The rest follow in later frames, 32 at most each.
    while view.ready_count() > 0 {
        let s = view.update(&grid, cam);
        assert!(s.published <= 32 && s.published > 0);
    }
}

#[test]
fn publication_stops_once_the_budget_has_passed_checked_between_results() {
    let grid = flat_world();
    let cam = Vec3::new(64.0, 100.0, 64.0);
    let mut view = view_with_ready_results(&grid, cam);
    // Each read of the clock is 0.75 ms later: the frame starts at 0, publishes
    // the first result unchecked, sees 0.75 and 1.5 ms before the second and third,
    // and 2.25 ms before the fourth, where it stops.
    let (clock, reads) = ticking(Duration::from_micros(750));
    view.set_clock(clock);
    let ready = view.ready_count();
    let s = view.update(&grid, cam);
    assert_eq!(s.published, 3);
    assert_eq!(view.ready_count(), ready - 3);
    assert_eq!(s.publish_time, Duration::from_micros(750) * 4);
    assert_eq!(
        reads.load(Ordering::SeqCst),
        5,
        "start, three checks, the total"
    );
    // A frame whose first upload alone overruns the budget still makes progress.
    let (clock, _) = ticking(Duration::from_millis(5));
    view.set_clock(clock);
    assert_eq!(view.update(&grid, cam).published, 1);
    // A generous budget: back to the count limit.
    view.settings.publish_budget = Duration::from_secs(1);
    assert_eq!(view.update(&grid, cam).published, 32);
}

#[test]
fn scans_run_on_8_units_of_camera_movement_or_a_new_draw_distance() {
    let grid = flat_world();
    let cam = Vec3::new(64.0, 100.0, 64.0);
    let settings = TerrainViewConfig {
        draw_distance: 500.0,
        ..Default::default()
    };
    let mut view = TerrainView::new(settings, 2);
    assert!(view.settle(&grid, cam, Duration::from_secs(120)));
    assert!(!view.update(&grid, cam).scanned, "settled: no scan");
    // Short of 8 units from the last scan, in any direction: no scan.
    assert!(!view.update(&grid, cam + Vec3::X * 7.9).scanned);
    assert!(!view.update(&grid, cam + Vec3::new(7.9, 0.0, 0.5)).scanned);
    assert!(!view.update(&grid, cam - Vec3::Y * 7.99).scanned);
    // Exactly 8 units: a scan, which becomes the new reference point.
    let at = cam + Vec3::X * 8.0;
    assert!(view.update(&grid, at).scanned);
    assert!(!view.update(&grid, at).scanned);
    // Movement is measured from the last scan, not frame to frame: two steps of 5.
    assert!(!view.update(&grid, at - Vec3::X * 5.0).scanned);
    assert!(view.update(&grid, at - Vec3::X * 10.0).scanned);
    // A new draw distance scans without any movement.
    let here = at - Vec3::X * 10.0;
    assert!(!view.update(&grid, here).scanned);
    view.settings.draw_distance = 520.0;
    assert!(view.update(&grid, here).scanned);
    assert!(!view.update(&grid, here).scanned);
    // A grid change scans too.
    let mut g = grid.clone();
    g.set_sphere(Vec3::new(64.0, 52.0, 64.0), 6.0, Material::AIR)
        .unwrap();
    assert!(view.update(&g, here).scanned);
}

/// One edit over more chunks than a refresh may publish: every refresh keeps both
/// limits (32 results, the time budget checked between results), the edit still
/// lands whole in the end, and a group that fits is never split.
#[test]
fn one_large_edit_never_exceeds_the_publication_limits() {
    for budget_step in [Duration::ZERO, Duration::from_micros(750)] {
        let mut grid = flat_world();
        let cam = Vec3::new(64.0, 100.0, 64.0);
        let mut view = TerrainView::new(
            TerrainViewConfig {
                draw_distance: 500.0,
                ..Default::default()
            },
            2,
        );
        assert!(view.settle(&grid, cam, Duration::from_secs(120)));
        let (clock, _) = ticking(budget_step);
        view.set_clock(clock);
        let r = grid
            .set_box(
                Vec3::new(-300.0, -60.0, -300.0),
                Vec3::new(428.0, 50.0, 428.0),
                Cell::full(Material::SAND),
            )
            .unwrap();
        assert!(r.chunks_changed > 64, "{} chunks", r.chunks_changed);
        let max = if budget_step.is_zero() { 32 } else { 3 };
        let start = Instant::now();
        let mut total = 0;
        while view.visible_revision() < grid.revision() || view.pending_count() > 0 {
            let s = view.update(&grid, cam);
            assert!(
                s.published <= max,
                "step {budget_step:?}: {} results in one refresh",
                s.published
            );
            total += s.published;
            assert!(start.elapsed() < Duration::from_secs(120), "stalled");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(total >= r.chunks_changed as usize, "{total} published");
    }
}
