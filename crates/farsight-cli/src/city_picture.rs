//! The city block's picture: the block from above around the camera at one frame,
//! each building coloured by the level it draws, buildings on a resident fallback
//! outlined, culled ones grey, street lamps small, the camera, its frustum and the
//! LOD distance rings drawn, with a legend and a scale in the image.

use std::path::Path;

use farsight_geom::transform_aabb;
use farsight_view::scenes::CityLayout;
use farsight_view::{ObjectId, ObjectStore, RenderConfig, Visibility};
use glam::Vec3;

use crate::picture::{nice_length, Canvas, Rgb, WHITE};

pub const LEVEL: [Rgb; 3] = [[230, 80, 60], [240, 190, 60], [90, 190, 90]];
pub const CULLED: Rgb = [95, 95, 95];
pub const FALLBACK: Rgb = [255, 60, 220];
pub const LAMP: Rgb = [90, 200, 240];
const CAMERA: Rgb = [255, 255, 255];
const GROUND: Rgb = [28, 30, 34];
const STREET: Rgb = [48, 50, 56];
const RING: Rgb = [150, 150, 200];

/// World window drawn: from a little behind the camera to 460 m ahead along the
/// street, and at most 240 m to each side (the whole block when it is smaller).
fn window(layout: &CityLayout, camera: Vec3) -> (f32, f32, f32, f32) {
    let half_depth =
        layout.street_half_width + layout.rows_per_side as f32 * layout.row_spacing + 10.0;
    let half_depth = half_depth.min(240.0);
    let x0 = (camera.x - 40.0).max(-20.0);
    let x1 = (x0 + 500.0).min(layout.length() + 20.0).max(x0 + 100.0);
    (x0, x1, -half_depth, half_depth)
}

/// The world window drawn and its scale: world x and z map to pixels.
#[derive(Clone, Copy)]
struct Frame {
    x0: f32,
    x1: f32,
    z0: f32,
    z1: f32,
    /// Pixels per metre.
    ppm: f32,
}

impl Frame {
    fn to_px(self, p: Vec3) -> (f32, f32) {
        ((p.x - self.x0) * self.ppm, (p.z - self.z0) * self.ppm)
    }
}

/// How many objects drew at each level, on a fallback, and culled, in the window.
#[derive(Default)]
struct Counts {
    levels: [usize; 3],
    fallbacks: usize,
    culled: usize,
}

pub fn draw(
    store: &ObjectStore,
    vis: &Visibility,
    layout: &CityLayout,
    settings: &RenderConfig,
    fov_y: f32,
    aspect: f32,
    path: &Path,
) -> Result<(), String> {
    let cam = vis.camera_position;
    let (x0, x1, z0, z1) = window(layout, cam);
    let width = 1400u32;
    let ppm = width as f32 / (x1 - x0);
    let height = (((z1 - z0) * ppm).round() as u32).max(200);
    let frame = Frame {
        x0,
        x1,
        z0,
        z1,
        ppm,
    };
    let mut img = Canvas::new(width, height, GROUND);
    let (_, sy0) = frame.to_px(Vec3::new(0.0, 0.0, -layout.street_half_width));
    let (_, sy1) = frame.to_px(Vec3::new(0.0, 0.0, layout.street_half_width));
    img.fill(0, sy0 as i64, width as i64, sy1 as i64, STREET);
    draw_rings(&mut img, &frame, cam);
    let counts = draw_objects(&mut img, &frame, store, vis);
    draw_camera(
        &mut img,
        &frame,
        vis,
        settings.cull_max_distance,
        fov_y,
        aspect,
    );
    write_with_key(img, &frame, &counts, path)
}

/// LOD distance rings around the camera (levels end at 50, 100, 200 m).
fn draw_rings(img: &mut Canvas, frame: &Frame, cam: Vec3) {
    let ppm = frame.ppm;
    let (cx, cy) = frame.to_px(cam);
    for r in [50.0f32, 100.0, 200.0] {
        let steps = 720;
        for s in 0..steps {
            if s % 6 < 3 {
                let a = s as f32 / steps as f32 * std::f32::consts::TAU;
                img.put(
                    (cx + a.cos() * r * ppm) as i64,
                    (cy + a.sin() * r * ppm) as i64,
                    RING,
                );
            }
        }
        img.text(
            (cx + r * ppm * 0.707 + 3.0) as i64,
            (cy - r * ppm * 0.707 - 14.0) as i64,
            &format!("{r:.0} M"),
            2,
            RING,
        );
    }
}

/// Every live object in the window, coloured by the level it draws (grey when culled),
/// outlined when it draws a resident fallback.
fn draw_objects(img: &mut Canvas, frame: &Frame, store: &ObjectStore, vis: &Visibility) -> Counts {
    let Frame { x0, x1, z0, z1, .. } = *frame;
    let mut visible = vec![false; store.len()];
    for &i in &vis.objects.visible {
        if let Some(v) = visible.get_mut(i as usize) {
            *v = true;
        }
    }
    let mut counts = Counts::default();
    for i in 0..store.len() as u32 {
        let id = ObjectId(i);
        if !store.is_alive(id) {
            continue;
        }
        let Some(world) = store.world(id) else {
            continue;
        };
        let b = transform_aabb(&world, &store.bounds(id));
        if b.max.x < x0 || b.min.x > x1 || b.max.z < z0 || b.min.z > z1 {
            continue;
        }
        let lod = store.lod(id);
        let seen = visible[i as usize];
        let colour = match (seen, lod.and_then(|l| l.current())) {
            (false, _) => {
                counts.culled += 1;
                CULLED
            }
            (true, Some(level)) => {
                counts.levels[level.min(2) as usize] += 1;
                LEVEL[level.min(2) as usize]
            }
            (true, None) => LAMP,
        };
        let (px0, py0) = frame.to_px(b.min);
        let (px1, py1) = frame.to_px(b.max);
        let (px0, py0, px1, py1) = (px0 as i64, py0 as i64, px1 as i64 + 1, py1 as i64 + 1);
        img.fill(px0, py0, px1, py1, colour);
        if seen && lod.is_some_and(|l| l.using_fallback()) {
            counts.fallbacks += 1;
            img.frame(px0 - 1, py0 - 1, px1 + 1, py1 + 1, FALLBACK);
            img.frame(px0 - 2, py0 - 2, px1 + 2, py1 + 2, FALLBACK);
        }
    }
    counts
}

/// The camera and its frustum, out to the cull distance or the picture's edge.
fn draw_camera(
    img: &mut Canvas,
    frame: &Frame,
    vis: &Visibility,
    cull_max_distance: f32,
    fov_y: f32,
    aspect: f32,
) {
    let cam = vis.camera_position;
    let (cx, cy) = frame.to_px(cam);
    let forward = {
        let cam_to_world = vis.view.inverse();
        let f = -cam_to_world.z_axis.truncate();
        let f = Vec3::new(f.x, 0.0, f.z);
        f.normalize_or(Vec3::X)
    };
    let half_h = ((fov_y * 0.5).tan() * aspect).atan();
    let reach = cull_max_distance.min(2.0 * (frame.x1 - frame.x0));
    for side in [-1.0f32, 1.0] {
        let (s, c) = (side * half_h).sin_cos();
        let dir = Vec3::new(
            forward.x * c - forward.z * s,
            0.0,
            forward.x * s + forward.z * c,
        );
        let (ex, ey) = frame.to_px(cam + dir * reach);
        img.line(cx, cy, ex, ey, CAMERA);
    }
    img.fill(
        cx as i64 - 4,
        cy as i64 - 4,
        cx as i64 + 5,
        cy as i64 + 5,
        CAMERA,
    );
}

/// Adds the legend and the scale, writes the PNG and says what it shows.
fn write_with_key(img: Canvas, frame: &Frame, counts: &Counts, path: &Path) -> Result<(), String> {
    let (levels, fallbacks, culled) = (counts.levels, counts.fallbacks, counts.culled);
    let labels = [
        format!("LOD0 (UNDER 50 M): {}", levels[0]),
        format!("LOD1 (50-100 M): {}", levels[1]),
        format!("LOD2 (OVER 100 M): {}", levels[2]),
        format!("ON A FALLBACK (OUTLINED): {fallbacks}"),
        format!("CULLED: {culled}"),
        "STREET LAMP (NO LOD)".to_string(),
        "CAMERA AND FRUSTUM".to_string(),
    ];
    let colours = [LEVEL[0], LEVEL[1], LEVEL[2], FALLBACK, CULLED, LAMP, WHITE];
    let entries: Vec<(Rgb, &str)> = colours
        .iter()
        .copied()
        .zip(labels.iter().map(String::as_str))
        .collect();
    let bar = nice_length(frame.x1 - frame.x0);
    let img = img.with_key(
        "CITY BLOCK FROM ABOVE AT FRAME 0: THE LEVEL EACH BUILDING DRAWS",
        &entries,
        frame.ppm,
        bar,
        &format!("{bar:.0} M"),
    );
    img.write_png(path)?;
    println!(
        "wrote {} (the block from above at frame 0: {} LOD0, {} LOD1, {} LOD2, {} on a fallback, {} culled; legend and scale in the picture)",
        path.display(),
        levels[0],
        levels[1],
        levels[2],
        fallbacks,
        culled
    );
    Ok(())
}
