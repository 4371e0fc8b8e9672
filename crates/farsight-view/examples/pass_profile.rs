//! Runs the visibility pass over the test city (docs/design/entity-lod.md#the-test-city) at a given size, for a profiler:
//! `cargo run --release -p farsight-view --example pass_profile -- 1000000 200`
//! then `perf record` the binary. Prints the mean time per frame.

use farsight_view::scenes::{city_block, street_camera};
use farsight_view::{CameraStore, FrameContext, ObjectStore, RenderConfig, VisibilitySystem};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let frames: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let mut store = ObjectStore::with_capacity(n);
    let layout = city_block(&mut store, n, 9);
    let mut cams = CameraStore::new();
    cams.insert(street_camera(&layout));
    let mut settings = RenderConfig {
        cull_min_pixels: 2.0,
        cull_max_distance: 1500.0,
        ..Default::default()
    };
    settings.lod.update_frame_interval = 1;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let mut sys = VisibilitySystem::new();
    let mut visible = 0;
    let start = std::time::Instant::now();
    let cpu0 = cpu_ticks();
    for frame in 1..=frames {
        let ctx = FrameContext {
            frame,
            host_view: None,
            cameras: &cams,
            world_epoch: 0,
            settings: &settings,
            stereo_eyes: None,
        };
        visible = pool.install(|| sys.update(&mut store, &ctx).objects.visible.len());
    }
    let per = start.elapsed().as_secs_f64() * 1e3 / frames as f64;
    let cpu = (cpu_ticks() - cpu0) as f64 * 10.0 / frames as f64;
    println!(
        "{n} objects, {visible} visible, {per:.2} ms per frame on one thread \
         ({cpu:.2} ms of CPU time per frame, 10 ms ticks)"
    );
}

/// User plus system time of the process in clock ticks (Linux; 0 elsewhere): CPU
/// time is steadier than wall time on a shared machine.
fn cpu_ticks() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |k: usize| f.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    tick(11) + tick(12)
}
