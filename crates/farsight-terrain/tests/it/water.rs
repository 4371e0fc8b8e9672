//! Water sheets, shore extension, wave fade, open sides, and reuse across LOD.

use std::sync::Arc;
use std::time::Duration;

use farsight_terrain::*;
use glam::{IVec3, Vec3};

/// Solid up to cell y=15 everywhere except a pit (cells 4..12 in x and z) whose
/// floor is cell 12; water fills the pit's cells 13..15, the top one half full.
fn pool() -> VoxelGrid {
    let mut g = VoxelGrid::new();
    g.set_box(
        Vec3::new(-200.0, -100.0, -200.0),
        Vec3::new(300.0, 63.0, 300.0),
        Cell::full(Material::ROCK),
    )
    .unwrap();
    g.set_box(
        Vec3::new(16.0, 52.0, 16.0),
        Vec3::new(47.0, 63.0, 47.0),
        Cell::EMPTY,
    )
    .unwrap();
    g.set_box(
        Vec3::new(16.0, 52.0, 16.0),
        Vec3::new(47.0, 59.0, 47.0),
        Cell::full(Material::WATER),
    )
    .unwrap();
    g.set_box(
        Vec3::new(16.0, 60.0, 16.0),
        Vec3::new(47.0, 63.0, 47.0),
        Cell::new(Material::WATER, 128),
    )
    .unwrap();
    g
}

#[test]
fn top_sheet_at_fractional_height_extends_over_the_shore_and_fades_out() {
    let g = pool();
    let mut w = WaterMesh::default();
    mesh_water(&g, IVec3::ZERO, &mut Vec::new(), &mut w);
    assert!(!w.is_empty());
    let top = (15.0 + 128.0 / 255.0) * CELL_SIZE;
    let sheet: Vec<_> = w
        .vertices
        .iter()
        .filter(|v| (v.position[1] - top).abs() < 1e-4)
        .collect();
    assert_eq!(
        sheet.len(),
        w.vertices.len(),
        "only the top sheet: the pit has no open side"
    );
    // The pit spans x 16..48; the sheet reaches one cell further over the shore.
    let (xmin, xmax) = sheet.iter().fold((f32::MAX, f32::MIN), |m, v| {
        (m.0.min(v.position[0]), m.1.max(v.position[0]))
    });
    assert_eq!((xmin, xmax), (12.0, 52.0));
    for v in &sheet {
        let [x, _, z] = v.position;
        let outline = x == 12.0 || x == 52.0 || z == 12.0 || z == 52.0;
        let open = (20.0..=44.0).contains(&x) && (20.0..=44.0).contains(&z);
        if outline {
            assert_eq!(v.fade, 0.0, "fade at the sheet edge {v:?}");
        }
        if open {
            assert_eq!(v.fade, 1.0, "full waves inside {v:?}");
        }
    }
    // Faces up.
    for t in w.indices.chunks_exact(3) {
        let [a, b, c] = [0, 1, 2].map(|k| Vec3::from(w.vertices[t[k] as usize].position));
        assert!((b - a).cross(c - a).y > 0.0);
    }
}

#[test]
fn water_beside_air_gets_open_vertical_sides() {
    let mut g = VoxelGrid::new();
    g.set_box(
        Vec3::new(40.0, 40.0, 40.0),
        Vec3::new(47.0, 47.0, 47.0),
        Cell::full(Material::WATER),
    )
    .unwrap();
    let mut w = WaterMesh::default();
    mesh_water(&g, IVec3::ZERO, &mut Vec::new(), &mut w);
    // 2x2x2 cells: 4 top quads + 4 sides x 4 cells.
    assert_eq!(w.indices.len() / 6, 4 + 16);
}

/// Open sides face out of the water (visible from outside with back-face culling),
/// and where a top sheet meets an open side both carry one fade value per position,
/// so animated waves open no crack.
#[test]
fn open_sides_face_out_and_share_the_sheet_edge_fade() {
    let mut g = VoxelGrid::new();
    // A half-full 3x3x2 block of water in the air: sheet edges meet sides everywhere.
    g.set_box(
        Vec3::new(40.0, 40.0, 40.0),
        Vec3::new(51.0, 43.0, 51.0),
        Cell::full(Material::WATER),
    )
    .unwrap();
    g.set_box(
        Vec3::new(40.0, 44.0, 40.0),
        Vec3::new(51.0, 47.0, 51.0),
        Cell::new(Material::WATER, 128),
    )
    .unwrap();
    let mut w = WaterMesh::default();
    mesh_water(&g, IVec3::ZERO, &mut Vec::new(), &mut w);
    let centre = Vec3::new(46.0, 44.0, 46.0);
    let mut sides = 0;
    for t in w.indices.chunks_exact(3) {
        let [a, b, c] = [0, 1, 2].map(|k| Vec3::from(w.vertices[t[k] as usize].position));
        let n = (b - a).cross(c - a);
        if n.y.abs() > 1e-6 {
            continue;
        }
        sides += 1;
        let mid = (a + b + c) / 3.0;
        let out = (mid - centre) * Vec3::new(1.0, 0.0, 1.0);
        assert!(
            n.dot(out) > 0.0,
            "side triangle {a} {b} {c} faces into the water"
        );
    }
    assert!(sides > 0);
    let mut fade_at: std::collections::HashMap<[u32; 3], f32> = Default::default();
    for v in &w.vertices {
        let key = v.position.map(f32::to_bits);
        let f = *fade_at.entry(key).or_insert(v.fade);
        assert_eq!(f, v.fade, "two fades at {:?}", v.position);
    }
}

#[test]
fn lod_changes_reuse_water_and_edits_rebuild_it() {
    let mut g = pool();
    let mut view = TerrainView::new(
        TerrainViewConfig {
            draw_distance: 800.0,
            ..Default::default()
        },
        2,
    );
    let near = Vec3::new(32.0, 80.0, 32.0);
    assert!(view.settle(&g, near, Duration::from_secs(60)));
    let water = view.water(IVec3::ZERO).expect("the pool has water").clone();
    assert_eq!(view.level(IVec3::ZERO), Some(0));
    let far = Vec3::new(32.0, 80.0, 32.0 + 600.0);
    assert!(view.settle(&g, far, Duration::from_secs(60)));
    assert_eq!(view.level(IVec3::ZERO), Some(1));
    assert!(
        Arc::ptr_eq(&water, view.water(IVec3::ZERO).unwrap()),
        "LOD-only change reuses water"
    );
    g.set_box(
        Vec3::new(16.0, 60.0, 16.0),
        Vec3::new(20.0, 63.0, 20.0),
        Cell::EMPTY,
    )
    .unwrap();
    assert!(view.settle(&g, far, Duration::from_secs(60)));
    assert!(
        !Arc::ptr_eq(&water, view.water(IVec3::ZERO).unwrap()),
        "a voxel edit rebuilds water"
    );
}

#[test]
fn a_pure_lod_request_keeps_water_dirtied_by_an_earlier_edit() {
    let mut g = pool();
    let mut view = TerrainView::new(
        TerrainViewConfig {
            draw_distance: 800.0,
            ..Default::default()
        },
        2,
    );
    let near = Vec3::new(32.0, 80.0, 32.0);
    assert!(view.settle(&g, near, Duration::from_secs(60)));
    // Drain part of the pool, and in the same frame move away so the chunk's level
    // changes: the LOD request replaces the edit's request but must keep its water.
    g.set_box(
        Vec3::new(16.0, 56.0, 16.0),
        Vec3::new(47.0, 63.0, 47.0),
        Cell::EMPTY,
    )
    .unwrap();
    let far = Vec3::new(32.0, 80.0, 32.0 + 600.0);
    let s = view.update(&g, far);
    assert!(s.edit_requests > 0 && s.transitions > 0);
    assert!(view.settle(&g, far, Duration::from_secs(60)));
    assert_eq!(view.level(IVec3::ZERO), Some(1));
    let mut fresh = WaterMesh::default();
    mesh_water(&g, IVec3::ZERO, &mut Vec::new(), &mut fresh);
    assert_eq!(
        **view.water(IVec3::ZERO).unwrap(),
        fresh,
        "water follows the edit"
    );
}
