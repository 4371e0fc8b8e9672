//! The terrain example's view, drawn on the CPU: every published chunk mesh (skirts
//! included) rasterised with back faces culled into a depth buffer at the example's
//! size and camera, looking for slivers of distant terrain or sky seen through the
//! near surface (cracks at chunk seams). `FARSIGHT_SEAMS_PPM=PATH` writes the
//! picture (levels tinted, skirts blue, crack pixels red).
//!
//! Issue 27 item 15: where the crater wall runs at a slant across the seam of a
//! level-0 and a level-1 chunk, the two borders are a few units apart along the wall,
//! and skirts flared straight across the chunk face left a 1-2 pixel sliver of the
//! hill behind the crater visible between them.

use std::time::Duration;

use farsight_terrain::*;
use glam::{IVec3, Mat4, Vec3, Vec4};

const W: usize = 640;
const H: usize = 360;

/// What one pixel shows.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Px {
    depth: f32,
    /// Chunk and level of the nearest triangle; `None`: background.
    hit: Option<(IVec3, u8, bool)>,
    normal: Vec3,
}

const SKY: Px = Px {
    depth: f32::INFINITY,
    hit: None,
    normal: Vec3::ZERO,
};

fn rasterise(meshes: &[std::sync::Arc<ChunkMesh>], view_proj: Mat4) -> Vec<Px> {
    let mut img = vec![SKY; W * H];
    for m in meshes {
        let clip: Vec<Vec4> = m
            .vertices
            .iter()
            .map(|v| view_proj * Vec3::from(v.position).extend(1.0))
            .collect();
        for (t, tri) in m.indices.chunks_exact(3).enumerate() {
            let skirt = t * 3 >= m.skirt_start;
            let c = [0, 1, 2].map(|k| clip[tri[k] as usize]);
            if c.iter().any(|p| p.w <= 0.1) {
                continue;
            }
            // Screen positions (pixel units, y down) and depth.
            let s = c.map(|p| {
                let n = p / p.w;
                Vec3::new(
                    (n.x * 0.5 + 0.5) * W as f32,
                    (0.5 - n.y * 0.5) * H as f32,
                    p.w,
                )
            });
            // Counter-clockwise in a y-up frame is front facing; y is down here.
            let area =
                (s[1].x - s[0].x) * (s[2].y - s[0].y) - (s[1].y - s[0].y) * (s[2].x - s[0].x);
            if area >= 0.0 {
                continue;
            }
            let lo = s.iter().fold(Vec3::INFINITY, |a, p| a.min(*p));
            let hi = s.iter().fold(Vec3::NEG_INFINITY, |a, p| a.max(*p));
            let x0 = (lo.x.floor().max(0.0)) as usize;
            let x1 = (hi.x.ceil().min(W as f32)) as usize;
            let y0 = (lo.y.floor().max(0.0)) as usize;
            let y1 = (hi.y.ceil().min(H as f32)) as usize;
            let n = [0, 1, 2].map(|k| Vec3::from(m.vertices[tri[k] as usize].normal));
            for y in y0..y1 {
                for x in x0..x1 {
                    let (px, py) = (x as f32 + 0.5, y as f32 + 0.5);
                    let e = |a: Vec3, b: Vec3| (b.x - a.x) * (py - a.y) - (b.y - a.y) * (px - a.x);
                    let w0 = e(s[1], s[2]);
                    let w1 = e(s[2], s[0]);
                    let w2 = e(s[0], s[1]);
                    // Inclusive on every edge: shared edges cover twice, never zero.
                    if w0 > 0.0 || w1 > 0.0 || w2 > 0.0 {
                        continue;
                    }
                    let sum = w0 + w1 + w2;
                    let (b0, b1, b2) = (w0 / sum, w1 / sum, w2 / sum);
                    let depth = 1.0 / (b0 / s[0].z + b1 / s[1].z + b2 / s[2].z);
                    let p = &mut img[x + W * y];
                    if depth < p.depth {
                        *p = Px {
                            depth,
                            hit: Some((m.chunk, m.level, skirt)),
                            normal: (n[0] * b0 + n[1] * b1 + n[2] * b2).normalize_or_zero(),
                        };
                    }
                }
            }
        }
    }
    img
}

/// Pixels that show something far behind what both their neighbours show (left and
/// right, or above and below, within `reach` pixels, those two at about one depth):
/// a sliver of distant terrain or sky seen through a gap in the near surface. Only
/// where terrain lies above too, so a notch in the horizon does not count, and only
/// between chunks `inner` accepts (the generated block's outer ring ends in a cliff
/// at the world's edge, which is no seam).
fn holes(img: &[Px], reach: usize, inner: impl Fn(IVec3) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for y in reach..H - reach {
        for x in reach..W - reach {
            let d = img[x + W * y].depth;
            let near = |dx: isize, dy: isize| {
                (1..=reach as isize)
                    .map(|k| {
                        let (xx, yy) = (x as isize + dx * k, y as isize + dy * k);
                        img[xx as usize + W * yy as usize]
                    })
                    .fold(SKY, |a, p| if p.depth < a.depth { p } else { a })
            };
            let sliver = |a: Px, b: Px| {
                let (Some(ha), Some(hb)) = (a.hit, b.hit) else {
                    return false;
                };
                let (a, b) = (a.depth, b.depth);
                inner(ha.0)
                    && inner(hb.0)
                    && (a - b).abs() < 0.05 * a.max(b)
                    && d > 1.1 * a.max(b) + 8.0
            };
            let above = (1..=y).any(|k| img[x + W * (y - k)].hit.is_some());
            if above && (sliver(near(-1, 0), near(1, 0)) || sliver(near(0, -1), near(0, 1))) {
                out.push((x, y));
            }
        }
    }
    out
}

fn write_ppm(img: &[Px], marks: &[(usize, usize)], path: &str) {
    let mut bytes = format!("P6 {W} {H} 255\n").into_bytes();
    let light = Vec3::new(0.3, 1.0, 0.5).normalize();
    for (i, p) in img.iter().enumerate() {
        let rgb = if marks.contains(&(i % W, i / W)) {
            [255, 0, 0]
        } else if let Some((_, level, skirt)) = p.hit {
            let l = (0.25 + 0.75 * p.normal.dot(light).max(0.0)) * 255.0;
            let tint = [1.0, 0.85, 0.7, 0.55][level as usize];
            if skirt {
                [0, (l * 0.5) as u8, l as u8]
            } else {
                [(l * tint) as u8, l as u8, (l * tint) as u8]
            }
        } else {
            [140, 178, 242]
        };
        bytes.extend_from_slice(&rgb);
    }
    std::fs::write(path, bytes).unwrap();
}

fn example_grid() -> (VoxelGrid, Vec3, Vec3) {
    let lake = Vec3::new(300.0, 92.0, 260.0);
    let params = TerrainGeneratorConfig {
        lake: Some((lake, 90.0)),
        ..Default::default()
    };
    let mut grid = VoxelGrid::new();
    generate(
        &mut grid,
        &params,
        IVec3::new(-2, 0, -2),
        IVec3::new(6, 1, 6),
    );
    (grid, Vec3::new(40.0, 210.0, 40.0), lake)
}

#[test]
fn example_view_has_no_crack() {
    let (grid, eye, target) = example_grid();
    let settings = TerrainViewConfig {
        draw_distance: 1100.0,
        ..Default::default()
    };
    let mut view = TerrainView::new(settings, 2);
    assert!(view.settle(&grid, eye, Duration::from_secs(300)));
    let meshes: Vec<_> = view
        .published()
        .filter_map(|(_, _, m)| m.cloned())
        .collect();
    let proj = Mat4::perspective_rh(
        std::f32::consts::FRAC_PI_4,
        W as f32 / H as f32,
        0.1,
        3000.0,
    );
    let view_m = Mat4::look_at_rh(eye, target, Vec3::Y);
    let img = rasterise(&meshes, proj * view_m);
    let found = holes(&img, 2, |c| {
        (-1..=5).contains(&c.x) && (-1..=5).contains(&c.z)
    });
    if let Ok(p) = std::env::var("FARSIGHT_SEAMS_PPM") {
        write_ppm(&img, &found, &p);
    }
    assert!(
        found.is_empty(),
        "{} crack pixels: {:?}",
        found.len(),
        &found[..found.len().min(20)]
    );
}
