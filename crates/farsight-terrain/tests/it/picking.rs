//! The editor's CPU picking copy: kept only when `TerrainViewConfig::picking` is on,
//! the displayed surface at its displayed level, skirts omitted.

use std::time::Duration;

use farsight_terrain::*;
use glam::{IVec3, Vec3};

use crate::common::flat_world;

fn view(grid: &VoxelGrid, cam: Vec3, picking: bool) -> TerrainView {
    let settings = TerrainViewConfig {
        draw_distance: 400.0,
        picking,
        ..Default::default()
    };
    let mut v = TerrainView::new(settings, 2);
    assert!(v.settle(grid, cam, Duration::from_secs(120)));
    v
}

/// Nearest two-sided hit of a ray on the triangles `tris` of `mesh` (brute force).
fn ray_mesh(mesh: &ChunkMesh, tris: &[u32], o: Vec3, d: Vec3, max_t: f32) -> Option<f32> {
    let mut best: Option<f32> = None;
    for t in tris.chunks_exact(3) {
        let [a, b, c] = [0, 1, 2].map(|k| Vec3::from(mesh.vertices[t[k] as usize].position));
        let (e1, e2) = (b - a, c - a);
        let p = d.cross(e2);
        let det = e1.dot(p);
        if det.abs() < 1e-12 {
            continue;
        }
        let s = o - a;
        let u = s.dot(p) / det;
        let q = s.cross(e1);
        let v = d.dot(q) / det;
        let h = e2.dot(q) / det;
        if u >= 0.0 && v >= 0.0 && u + v <= 1.0 && h >= 0.0 && h <= max_t {
            best = Some(best.map_or(h, |b: f32| b.min(h)));
        }
    }
    best
}

#[test]
fn a_game_keeps_no_picking_copy() {
    let g = flat_world();
    let cam = Vec3::new(64.0, 150.0, 64.0);
    let v = view(&g, cam, false);
    assert!(v.visible().count() > 10);
    assert_eq!(v.pick_bytes(), 0);
    assert!(v
        .pick(Vec3::new(64.0, 300.0, 64.0), Vec3::NEG_Y, 1000.0)
        .is_none());
}

#[test]
fn the_editor_picks_the_displayed_surface_without_skirts() {
    let mut g = flat_world();
    let cam = Vec3::new(64.0, 150.0, 64.0);
    let mut v = view(&g, cam, true);
    assert!(v.pick_bytes() > 0);
    // Straight down onto the flat ground, in the camera's chunk and a farther one.
    for (x, z) in [(30.0, 30.0), (200.0, 30.0), (-200.0, 250.0)] {
        let o = Vec3::new(x, 300.0, z);
        let hit = v.pick(o, Vec3::NEG_Y, 1000.0).expect("ground below");
        assert!((hit.point.y - 52.0).abs() < 1e-3, "{hit:?}");
        assert!(hit.normal.y > 0.99);
        assert_eq!(Some(hit.level), v.level(hit.chunk));
        let mesh = v.mesh(hit.chunk).unwrap();
        let t = ray_mesh(mesh, mesh.surface_indices(), o, Vec3::NEG_Y, 1000.0).unwrap();
        assert!((t - hit.distance).abs() < 1e-3);
    }
    // Sideways just under the surface, across the border of chunks 0 and 1: the
    // render meshes hang skirts there, the picking copy has none.
    let (o, d) = (Vec3::new(100.0, 49.0, 30.0), Vec3::X);
    let render = v.mesh(IVec3::ZERO).unwrap();
    let skirts = &render.indices[render.skirt_start..];
    assert!(
        ray_mesh(render, skirts, o, d, 60.0).is_some(),
        "the render mesh has a skirt on this ray"
    );
    assert!(v.pick(o, d, 60.0).is_none(), "picking hit a skirt");
    // After an edit is displayed, picking sees it.
    g.set_sphere(Vec3::new(64.0, 52.0, 64.0), 20.0, Material::AIR)
        .unwrap();
    assert!(v.settle(&g, cam, Duration::from_secs(120)));
    let crater = v
        .pick(Vec3::new(64.0, 300.0, 64.0), Vec3::NEG_Y, 1000.0)
        .unwrap();
    assert!(crater.point.y < 40.0, "{crater:?}");
}
