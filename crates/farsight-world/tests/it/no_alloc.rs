//! The loop allocates nothing per frame in steady state: after a warm-up, frames of
//! a camera going back and forth over streamed-in ground (levels resident, terrain
//! meshed, rescans as it moves) allocate nothing, with the recording on (every
//! frame's input and hashes kept, in a recording with room for them) and off.
//!
//! The counting allocator counts only on the thread that asked it to (a
//! thread-local flag), so the I/O and meshing threads do not disturb the count
//! (farsight-testkit's `CountingAlloc`). `FARSIGHT_ALLOC_TRACE=1` prints a backtrace of each
//! counted allocation.

use std::time::Duration;

use farsight_testkit::{scratch, CountingAlloc};
use farsight_world::{
    generate, Flight, FrameInput, Recording, SyntheticConfig, World, WorldConfig,
};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

/// Allocations made by this thread while running `f`.
fn count<R>(f: impl FnOnce() -> R) -> (u64, R) {
    GLOBAL.set_backtraces(std::env::var_os("FARSIGHT_ALLOC_TRACE").is_some());
    GLOBAL.count_this_thread(f)
}

/// Frame `i` of a camera going back and forth over `span` frames of the flight's
/// first leg, without edits.
fn pose(flight: &Flight, span: u32, i: u32, input: &mut FrameInput) {
    let k = i % (2 * span);
    let f = flight.frame(if k < span { k } else { 2 * span - 1 - k });
    input.camera = f.camera.to_array();
    input.target = f.target.to_array();
    input.prefetch = None;
    input.edits.clear();
}

#[test]
fn steady_frames_of_the_loop_allocate_nothing_with_the_recording_on_and_off() {
    let dir = scratch("steady");
    generate(&dir, &SyntheticConfig::small(), &mut |_| {}).unwrap();
    let config = WorldConfig::default();
    let mut world = World::open(&dir, config).unwrap();
    let flight = Flight::new(world.manifest(), 300);
    // 12 frames each way: 36 units, past the terrain's 8-unit rescan distance.
    let span = 12;
    let mut input = FrameInput::default();
    pose(&flight, span, 0, &mut input);
    input.loading = true;
    for _ in 0..5000 {
        world.step(&mut input);
        if world.ready() {
            break;
        }
        world.wait_for_io(Duration::from_millis(1));
    }
    assert!(world.ready(), "loading waits on {:?}", world.waiting_on());
    input.loading = false;
    // Warm-up: the back-and-forth until every system has settled (nothing loads,
    // nothing is evicted, the terrain meshed at its levels), a few rounds more so
    // buffers reach their working size.
    let mut i = 0;
    let mut calm = 0;
    for _ in 0..3000 {
        pose(&flight, span, i, &mut input);
        i += 1;
        let r = world.step(&mut input);
        let quiet = input.regions_done.is_empty()
            && input.chunks_done.is_empty()
            && input.terrain.is_empty()
            && r.upload == 0;
        calm = if quiet { calm + 1 } else { 0 };
        if std::env::var_os("FARSIGHT_ALLOC_TRACE").is_some() && !quiet {
            eprintln!(
                "frame {i}: regions {} chunks {} terrain {:?} upload {:?}",
                input.regions_done.len(),
                input.chunks_done.len(),
                input.terrain,
                r.systems.map(|s| s.upload)
            );
        }
        if calm >= 4 * span {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(calm >= 4 * span, "the loop settled on the back-and-forth");

    // The counter sees this thread's allocations.
    let (n, _) = count(|| std::hint::black_box(Vec::<u8>::with_capacity(8)));
    assert_eq!(n, 1, "the counter counts");

    // Recording off: the caller reuses one input.
    let (n, _) = count(|| {
        for _ in 0..4 * span {
            pose(&flight, span, i, &mut input);
            i += 1;
            world.step(&mut input);
        }
    });
    assert_eq!(
        n,
        0,
        "allocations in {} steady frames, recording off",
        4 * span
    );

    // Recording on: every input and its hashes kept.
    let mut rec = Recording {
        world: dir.clone(),
        config,
        frames: Vec::with_capacity(8 * span as usize),
        hashes: Vec::with_capacity(8 * span as usize),
    };
    let (n, _) = count(|| {
        for _ in 0..4 * span {
            pose(&flight, span, i, &mut input);
            i += 1;
            let r = world.step(&mut input);
            rec.frames.push(input.clone());
            rec.hashes.push(r.hashes);
        }
    });
    assert_eq!(
        n,
        0,
        "allocations in {} steady frames, recording on",
        4 * span
    );
    assert_eq!(rec.frames.len(), 4 * span as usize);
    drop(world);
    std::fs::remove_dir_all(&dir).unwrap();
}
