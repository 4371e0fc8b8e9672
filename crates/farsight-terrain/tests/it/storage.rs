//! Storage, edits, snapshots and change tracking as a user of the grid sees them.

use farsight_terrain::*;
use glam::{IVec3, Vec3};

fn rock() -> Cell {
    Cell::full(Material::ROCK)
}

#[test]
fn snapshots_share_chunks_and_ignore_later_writes() {
    let mut g = VoxelGrid::new();
    g.set_box(Vec3::ZERO, Vec3::splat(200.0), rock()).unwrap();
    g.set_sphere(Vec3::splat(60.0), 20.0, Material::AIR)
        .unwrap();
    let snap = g.snapshot();
    let dense = IVec3::ZERO;
    assert!(
        snap.shares_chunk_with(&g, dense),
        "a snapshot copies no chunk"
    );
    let before = snap.cell(IVec3::new(15, 15, 15));
    g.set_box(Vec3::ZERO, Vec3::splat(100.0), Cell::full(Material::SAND))
        .unwrap();
    assert!(
        !snap.shares_chunk_with(&g, dense),
        "the write copied the shared chunk"
    );
    assert_eq!(
        snap.cell(IVec3::new(15, 15, 15)),
        before,
        "snapshot unaffected"
    );
    assert_eq!(g.cell(IVec3::new(15, 15, 15)), Cell::full(Material::SAND));
    // A chunk the write did not touch is still shared.
    assert!(snap.shares_chunk_with(&g, IVec3::new(1, 1, 1)));
    g.validate().unwrap();
}

#[test]
fn selective_snapshot_holds_requested_chunks_and_neighbours_only() {
    let mut g = VoxelGrid::new();
    g.set_box(Vec3::splat(-1000.0), Vec3::splat(1000.0), rock())
        .unwrap();
    let s = g.snapshot_of(&[IVec3::ZERO]);
    assert_eq!(s.chunk_count(), 27);
    assert!(g.chunk_count() > 27 * 10);
}

#[test]
fn uniform_chunks_are_constant_memory_and_empty_chunks_are_removed() {
    let mut g = VoxelGrid::new();
    g.set_box(Vec3::ZERO, Vec3::splat(255.0), rock()).unwrap();
    assert_eq!(g.chunk_count(), 8);
    assert_eq!(g.uniform_chunk_count(), 8);
    assert_eq!(g.heap_bytes(), 0, "all-full chunks hold no cell array");
    let r0 = g.revision();
    g.set_box(Vec3::ZERO, Vec3::splat(127.0), Cell::EMPTY)
        .unwrap();
    assert_eq!(g.chunk_count(), 7);
    match g.changes_since(g.generation(), r0) {
        Changes::Delta { changed, removed } => {
            assert!(changed.is_empty());
            assert_eq!(removed, vec![IVec3::ZERO]);
        }
        other => panic!("expected a delta, got {other:?}"),
    }
    g.validate().unwrap();
}

#[test]
fn unchanged_edit_creates_no_revision() {
    let mut g = VoxelGrid::new();
    let r = g.set_box(Vec3::ZERO, Vec3::splat(50.0), rock()).unwrap();
    assert_eq!(r.revision, Some(1));
    let again = g.set_box(Vec3::ZERO, Vec3::splat(50.0), rock()).unwrap();
    assert_eq!(again, EditReport::default());
    assert_eq!(g.revision(), 1);
    let paint_air = g
        .paint_box(Vec3::splat(500.0), Vec3::splat(600.0), Material::SAND)
        .unwrap();
    assert_eq!(paint_air.revision, None, "painting air changes nothing");
}

#[test]
fn bad_edits_are_typed_errors_and_write_nothing() {
    let mut g = VoxelGrid::new();
    let nan = Vec3::new(f32::NAN, 0.0, 0.0);
    assert!(matches!(
        g.set_box(nan, Vec3::ONE, rock()),
        Err(EditError::NonFinite { .. })
    ));
    assert!(matches!(
        g.set_box(Vec3::ONE, Vec3::ZERO, rock()),
        Err(EditError::InvertedBox { .. })
    ));
    assert!(matches!(
        g.set_box(Vec3::ZERO, Vec3::splat(1e30), rock()),
        Err(EditError::OutOfRange { .. })
    ));
    assert!(matches!(
        g.set_box(Vec3::ZERO, Vec3::splat(1e6), rock()),
        Err(EditError::TooLarge { .. })
    ));
    assert!(matches!(
        g.set_sphere(Vec3::ZERO, -1.0, Material::ROCK),
        Err(EditError::NegativeRadius { .. })
    ));
    assert!(matches!(
        g.set_sphere(Vec3::ZERO, f32::INFINITY, Material::ROCK),
        Err(EditError::NonFinite { .. })
    ));
    assert!(matches!(
        g.paint_box(Vec3::ZERO, Vec3::ONE, Material::WATER),
        Err(EditError::NotSolid { .. })
    ));
    assert_eq!((g.revision(), g.chunk_count()), (0, 0));
}

#[test]
fn change_log_full_refresh_cases() {
    let mut g = VoxelGrid::new();
    g.set_box(Vec3::ZERO, Vec3::splat(10.0), rock()).unwrap();
    let (gen, rev) = (g.generation(), g.revision());
    assert!(matches!(
        g.changes_since(gen + 999, rev),
        Changes::Full(FullRefresh::GenerationMismatch { .. })
    ));
    assert!(matches!(
        g.changes_since(gen, rev + 1),
        Changes::Full(FullRefresh::FromTheFuture { .. })
    ));
    let clone = g.clone();
    assert_ne!(clone.generation(), gen, "a clone has a fresh generation");
    assert!(matches!(
        clone.changes_since(gen, rev),
        Changes::Full(FullRefresh::GenerationMismatch { .. })
    ));
    // Overflow the removal history: create and remove more chunks than it holds.
    for i in 0..(REMOVAL_HISTORY as i32 + 8) {
        let p = Vec3::new(1000.0 + i as f32 * 128.0, 0.0, 0.0);
        g.set_box(p, p + 4.0, rock()).unwrap();
        g.set_box(p, p + 4.0, Cell::EMPTY).unwrap();
    }
    assert!(matches!(
        g.changes_since(gen, rev),
        Changes::Full(FullRefresh::HistoryExpired { .. })
    ));
    // A recent reader still gets a delta.
    let r = g.revision();
    g.set_box(Vec3::ZERO, Vec3::splat(3.0), Cell::full(Material::SAND))
        .unwrap();
    match g.changes_since(gen, r) {
        Changes::Delta { changed, removed } => {
            assert_eq!(changed.len(), 1);
            assert!(removed.is_empty());
            assert_eq!(changed[0].bounds, CellBox::new(IVec3::ZERO, IVec3::ONE));
            assert!(!changed[0].whole);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn edit_bounds_tell_interior_from_border_and_expire_to_whole_chunk() {
    let mut g = VoxelGrid::new();
    g.set_box(Vec3::ZERO, Vec3::splat(127.0), rock()).unwrap();
    let r = g.revision();
    // An interior edit: cells 10..12.
    g.set_box(Vec3::splat(40.0), Vec3::splat(47.0), Cell::EMPTY)
        .unwrap();
    let Changes::Delta { changed, .. } = g.changes_since(g.generation(), r) else {
        panic!()
    };
    let b = changed[0].global_bounds();
    let mut hit = ChunkSet::default();
    affected_chunks(b, |_| 0, &mut hit);
    assert_eq!(hit.len(), 1, "interior edit invalidates only its chunk");
    // A corner edit reaches the 7 chunks around the corner.
    g.set_box(Vec3::splat(120.0), Vec3::splat(127.0), Cell::EMPTY)
        .unwrap();
    let mut hit = ChunkSet::default();
    affected_chunks(
        CellBox::new(IVec3::splat(31), IVec3::splat(32)),
        |_| 0,
        &mut hit,
    );
    assert_eq!(hit.len(), 8, "corner edit invalidates diagonal neighbours");
    // Seven more edits: the one after r has expired, so the whole chunk is reported.
    for i in 0..7 {
        let p = Vec3::splat(8.0 * i as f32 + 2.0);
        g.set_box(p, p, Cell::full(Material::SAND)).unwrap();
    }
    let Changes::Delta { changed, .. } = g.changes_since(g.generation(), r) else {
        panic!()
    };
    assert!(changed[0].whole);
    assert_eq!(changed[0].bounds, CellBox::CHUNK_LOCAL);
}

#[test]
fn a_chunk_an_edit_creates_reports_the_edit_not_the_whole_chunk() {
    // Solid ground up to y = 126, nothing above: a mound on the ground writes the
    // unwritten chunk above (issue 27 item 21: it was reported whole, so its 26
    // neighbours' meshes and colliders were rebuilt for a 3-cell mound).
    let mut g = VoxelGrid::new();
    g.set_box(Vec3::ZERO, Vec3::new(255.0, 126.0, 255.0), rock())
        .unwrap();
    assert!(g.entry(IVec3::new(0, 1, 0)).is_none());
    let r = g.revision();
    g.set_sphere(Vec3::new(60.0, 126.0, 60.0), 6.0, Material::ROCK)
        .unwrap();
    let Changes::Delta { changed, removed } = g.changes_since(g.generation(), r) else {
        panic!()
    };
    assert!(removed.is_empty());
    let above = changed
        .iter()
        .find(|c| c.chunk == IVec3::new(0, 1, 0))
        .expect("the mound wrote the chunk above");
    assert!(!above.whole, "{above:?}");
    assert!(above.bounds.max.y <= 3, "{above:?}");
    let mut hit = ChunkSet::default();
    for c in &changed {
        collision_affected(c.global_bounds(), &mut hit);
    }
    assert_eq!(hit.len(), 2, "the mound and the ground under it: {hit:?}");
    // Removed and written again since the reader's revision: it held other cells
    // then, so it is whole.
    let r = g.revision();
    g.set_box(
        Vec3::new(0.0, 128.0, 0.0),
        Vec3::new(127.0, 255.0, 127.0),
        Cell::EMPTY,
    )
    .unwrap();
    assert!(g.entry(IVec3::new(0, 1, 0)).is_none());
    g.set_box(
        Vec3::new(8.0, 128.0, 8.0),
        Vec3::new(11.0, 131.0, 11.0),
        rock(),
    )
    .unwrap();
    let Changes::Delta { changed, removed } = g.changes_since(g.generation(), r) else {
        panic!()
    };
    assert!(removed.is_empty());
    assert!(changed
        .iter()
        .any(|c| c.chunk == IVec3::new(0, 1, 0) && c.whole));
    // A reader from before the mound: the chunk was removed since, so whole too.
    let r0 = r - 1;
    let Changes::Delta { changed, .. } = g.changes_since(g.generation(), r0) else {
        panic!()
    };
    assert!(changed
        .iter()
        .any(|c| c.chunk == IVec3::new(0, 1, 0) && c.whole));
}
