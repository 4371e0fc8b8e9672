//! Steady-state frames of the pass allocate nothing, on one thread and on several.
//! This file holds a single test so the counting allocator sees only this pass.

use farsight_testkit::{CountingAlloc, Threads};
use farsight_view::scenes::city_block;
use farsight_view::{
    Camera, CameraStore, FrameContext, ObjectStore, Projection, RenderConfig, VisibilitySystem,
};
use glam::Vec3;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

#[test]
fn steady_state_update_allocates_nothing() {
    let mut store = ObjectStore::new();
    let layout = city_block(&mut store, 20_000, 5);
    let mut cams = CameraStore::new();
    let projection = Projection::Perspective {
        fov_y: 1.0,
        aspect: 1.7,
        near: 0.1,
        far: 3000.0,
    };
    let cam = cams.insert(Camera::looking_at(projection, Vec3::ZERO, Vec3::X));
    let mut settings = RenderConfig {
        cull_min_pixels: 2.0,
        cull_max_distance: 800.0,
        ..Default::default()
    };
    settings.lod.enable_fade_transitions = true;
    let mut sys = VisibilitySystem::new();
    let frames = 120u64;
    let frame =
        |sys: &mut VisibilitySystem, store: &mut ObjectStore, cams: &mut CameraStore, f: u64| {
            // Back and forth along the street, so levels switch every few frames.
            let t = (f % frames) as f32 / frames as f32;
            let x = layout.length() * 0.5 * (1.0 - (t * std::f32::consts::TAU).cos());
            let eye = Vec3::new(x, 1.7, 0.0);
            cams.get_mut(cam).unwrap().world =
                Some(glam::Mat4::look_at_rh(eye, eye + Vec3::X, Vec3::Y).inverse());
            let ctx = FrameContext {
                frame: f,
                host_view: None,
                cameras: cams,
                world_epoch: 0,
                settings: &settings,
                stereo_eyes: None,
            };
            sys.update(store, &ctx);
            sys.stats()
        };
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            // Warm-up: one full flight grows every buffer to its steady size.
            for f in 0..frames {
                frame(&mut sys, &mut store, &mut cams, f);
            }
            GLOBAL.reset_window();
            GLOBAL.open_window(Threads::All);
            let mut switches = 0;
            for f in frames..3 * frames {
                switches += frame(&mut sys, &mut store, &mut cams, f).lod_switches;
            }
            GLOBAL.close_window();
            let n = GLOBAL.window_count();
            assert!(
                switches > 1000,
                "the flight must switch levels, got {switches}"
            );
            assert_eq!(
                n,
                0,
                "{n} allocations in {} steady frames on {threads} threads",
                2 * frames
            );
        });
    }
}
