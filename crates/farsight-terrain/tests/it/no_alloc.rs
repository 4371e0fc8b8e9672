//! Steady state allocates nothing on the per-frame paths: `TerrainView::update`
//! with nothing changed (publication, dispatch) and with the camera moving far
//! enough to rescan levels without changing any, and meshing into reused buffers.
//!
//! The counting allocator counts only on threads that asked it to (a thread-local
//! flag), so the meshing workers and the other tests in this binary do not disturb
//! the count (farsight-testkit's `CountingAlloc`).

use std::time::Duration;

use farsight_terrain::*;
use farsight_testkit::CountingAlloc;
use glam::{IVec3, Vec3};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

/// Allocations made by this thread while running `f`.
fn count<R>(f: impl FnOnce() -> R) -> (u64, R) {
    GLOBAL.count_this_thread(f)
}

fn hills() -> VoxelGrid {
    let mut g = VoxelGrid::new();
    let p = TerrainGeneratorConfig {
        base_height: 40.0,
        hill_height: 60.0,
        ..Default::default()
    };
    generate(&mut g, &p, IVec3::new(-1, 0, -1), IVec3::new(1, 0, 1));
    g
}

#[test]
fn counting_sees_allocations() {
    let (n, v) = count(|| vec![1u8; 100]);
    assert_eq!((n, v.len()), (1, 100), "the allocator must count");
}

#[test]
fn steady_frames_allocate_nothing_while_scanning_and_publishing() {
    let grid = hills();
    let settings = TerrainViewConfig {
        draw_distance: 600.0,
        ..Default::default()
    };
    let mut view = TerrainView::new(settings, 2);
    let cam = Vec3::new(64.0, 200.0, 64.0);
    assert!(view.settle(&grid, cam, Duration::from_secs(120)));
    // The camera circles 12 units around `cam`: every frame moves it 2 units, a scan
    // runs about every fourth frame, and no chunk changes level.
    let at = |f: usize| {
        let a = f as f32 * 2.0 / 12.0;
        cam + Vec3::new(a.cos(), 0.0, a.sin()) * 12.0
    };
    // Warm-up: the scan scratch grows to its working size.
    for f in 0..60 {
        let s = view.update(&grid, at(f));
        assert_eq!((s.transitions, s.dispatched, s.published), (0, 0, 0));
    }
    let mut scans = 0;
    let (n, ()) = count(|| {
        for f in 60..360 {
            let s = view.update(&grid, at(f));
            scans += s.scanned as usize;
            assert_eq!((s.transitions, s.dispatched, s.published), (0, 0, 0));
        }
    });
    assert!(scans > 50, "only {scans} scans ran");
    assert_eq!(n, 0, "{n} allocations in 300 steady frames ({scans} scans)");
}

#[test]
fn meshing_into_reused_buffers_allocates_nothing() {
    let grid = hills();
    let chunks: Vec<IVec3> = (-1..=1)
        .flat_map(|x| (-1..=1).flat_map(move |z| (0..2).map(move |y| IVec3::new(x, y, z))))
        .collect();
    let mut mesher = ChunkMesher::new();
    let mut out = ChunkMesh::default();
    let mut collision = CollisionMesher::new();
    let mut triangles = 0;
    let mut all = |mesher: &mut ChunkMesher, out: &mut ChunkMesh, tris: &mut usize| {
        for &c in &chunks {
            for level in 0..4 {
                mesher.mesh_into(&grid, c, level, out);
                *tris += out.triangle_count();
            }
            *tris += collision.build(&grid, c).indices.len();
        }
    };
    all(&mut mesher, &mut out, &mut triangles); // warm-up: buffers reach their size
    let (n, ()) = count(|| all(&mut mesher, &mut out, &mut triangles));
    assert!(triangles > 20_000);
    assert_eq!(
        n,
        0,
        "{n} allocations meshing {} chunks again",
        chunks.len()
    );
}
