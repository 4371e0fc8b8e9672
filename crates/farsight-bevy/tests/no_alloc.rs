//! The plugin's per-frame systems (every `FarsightSet`) allocate nothing in steady
//! state: a moving camera that changes levels and culls, 1% of the entities moving each
//! frame. This file holds a single test so the counting allocator sees only it.
//!
//! # What is counted
//! Every allocation and reallocation made while one of farsight's sets runs, on the
//! threads that run farsight's code: the thread that runs the schedule (the single-
//! threaded executor runs every system on it) and the workers of the rayon pool the
//! pass runs on. Other threads are not counted: Bevy's task-pool threads, the test
//! harness's main thread and any other background thread can allocate at any time,
//! and a process-wide flag would count them whenever they happen to do so inside the
//! window (no farsight code runs on them in this test: no regions, no terrain, and the
//! plugin uses no Bevy task pool). The test checks, in the built schedule, that only
//! systems of the `FarsightSet`s run inside the counting windows.
//!
//! # Time
//! Bevy swaps its message buffers only after a fixed-timestep tick (its
//! `signal_message_update_system` overrides `ShouldUpdateMessages::Always`), so with
//! the wall clock, frames faster than 64 Hz pile several frames' `FarsightLodChanged`
//! into one buffer, and whether that buffer outgrows the capacity reached in warm-up
//! depends on the machine's load: that was the last source of 0 or 1 allocation from
//! run to run (backtrace: `Messages::write` in `apply`). The frames here run one fixed
//! step each (`TimeUpdateStrategy::FixedTimesteps(1)`), so buffers swap every frame and
//! the sequence of frames repeats exactly.
//!
//! Set `FARSIGHT_ALLOC_BACKTRACE=1` to print the backtrace of every counted allocation.

use std::any::TypeId;

use bevy::asset::{AssetEventSystems, AssetPlugin};
use bevy::camera::visibility::VisibilitySystems;
use bevy::camera::CameraPlugin;
use bevy::ecs::message::Messages;
use bevy::ecs::schedule::graph::Direction;
use bevy::ecs::schedule::{ApplyDeferred, SingleThreadedExecutor, SystemKey, SystemSet};
use bevy::mesh::{mark_3d_meshes_as_changed_if_their_assets_changed, MeshPlugin};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy::transform::{TransformPlugin, TransformSystems};
use farsight_bevy::{
    FarsightConfig, FarsightLod, FarsightLodChanged, FarsightPlugin, FarsightSet, FarsightWorld,
};
use farsight_testkit::{CountingAlloc, Threads};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

/// The markers' sets, to find them in the built schedule.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct CountOn;

#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct CountOff;

fn count_on() {
    GLOBAL.open_window(Threads::Marked);
}

fn count_off() {
    GLOBAL.close_window();
}

/// Checks that, in the built `PostUpdate` schedule, only systems of farsight's sets
/// (and sync points) run between a `count_on` and the next `count_off`, so the count
/// is farsight's. Returns how many systems the windows hold.
fn farsight_systems_in_the_windows(app: &App) -> usize {
    let schedule = app.world().resource::<Schedules>().get(PostUpdate).unwrap();
    let graph = schedule.graph();
    let members = |sets: &[bevy::ecs::intern::Interned<dyn SystemSet>]| -> Vec<SystemKey> {
        sets.iter()
            .flat_map(|&set| graph.systems_in_set(set).into_iter().flatten().copied())
            .collect()
    };
    let farsight = members(&FarsightSet::ALL.map(|s| s.intern()));
    let on = members(&[CountOn.intern()]);
    let off = members(&[CountOff.intern()]);
    let sync = TypeId::of::<ApplyDeferred>();
    let (mut inside, mut count, mut windows) = (false, 0, 0);
    let mut others = Vec::new();
    for (k, s) in schedule.systems().unwrap() {
        if on.contains(&k) {
            assert!(!inside, "two count_on without a count_off");
            inside = true;
            windows += 1;
        } else if off.contains(&k) {
            assert!(inside, "count_off outside a window");
            inside = false;
        } else if inside && s.system_type() != sync {
            if farsight.contains(&k) {
                count += 1;
            } else {
                // Named by their sets (system names need Bevy's `debug` feature).
                let sets = graph
                    .hierarchy()
                    .graph()
                    .neighbors_directed(k.into(), Direction::Incoming)
                    .map(|n| graph.get_node_name(&n))
                    .filter(|n| !n.starts_with("SystemTypeSet"))
                    .collect::<Vec<_>>();
                others.push(sets);
            }
        }
    }
    assert!(
        others.is_empty(),
        "systems of no farsight set run while counting, in sets {others:?}"
    );
    assert_eq!(windows, 2);
    count
}

#[test]
fn steady_state_frames_of_the_plugin_allocate_nothing() {
    // The pass runs on rayon. Called from a thread outside rayon's pool, every call
    // injects a job into rayon's global queue, and crossbeam's injector allocates one
    // 1,520-byte block per 63 jobs (2 per 120 frames here; seen with a backtrace in
    // this allocator). That is rayon's entry cost, not the plugin's: as farsight-view's
    // own test does, the frames run inside a rayon pool so the systems are measured.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .start_handler(|_| CountingAlloc::mark_this_thread())
        .build()
        .unwrap();
    pool.install(frames_of_the_plugin);
}

fn frames_of_the_plugin() {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        AssetPlugin::default(),
        MeshPlugin,
        TransformPlugin,
        CameraPlugin,
        FarsightPlugin,
    ));
    app.insert_resource(FarsightConfig {
        cull_min_pixels: 2.0,
        cull_max_distance: 300.0,
        ..Default::default()
    });
    // One system at a time, so only farsight's systems run while counting.
    app.edit_schedule(PostUpdate, |s| {
        s.set_executor(SingleThreadedExecutor::new());
    });
    app.add_systems(
        PostUpdate,
        (
            count_on
                .in_set(CountOn)
                .after(TransformSystems::Propagate)
                .after(AssetEventSystems)
                .after(mark_3d_meshes_as_changed_if_their_assets_changed)
                .after(VisibilitySystems::UpdateFrusta)
                .after(VisibilitySystems::VisibilityPropagate)
                .before(FarsightSet::Regions)
                .before(FarsightSet::Terrain)
                .before(FarsightSet::Clusters),
            count_off
                .in_set(CountOff)
                .after(FarsightSet::Apply)
                .before(VisibilitySystems::CalculateBounds),
            count_on
                .in_set(CountOn)
                .after(VisibilitySystems::CheckVisibility)
                .before(FarsightSet::Restrict),
            count_off
                .in_set(CountOff)
                .after(FarsightSet::Restrict)
                .before(VisibilitySystems::MarkNewlyHiddenEntitiesInvisible),
        ),
    );

    let levels: Vec<Handle<Mesh>> = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        [3, 1, 0]
            .into_iter()
            .map(|k| meshes.add(Sphere::new(0.5).mesh().ico(k).unwrap()))
            .collect()
    };
    let lod = FarsightLod::from_ranges(levels.iter().cloned().zip([20.0, 60.0, 200.0])).unwrap();
    // A street of 2,000 entities along -Z, 1 to 4 m wide.
    let n = 2_000;
    let objects: Vec<Entity> = app
        .world_mut()
        .spawn_batch((0..n).map(|i| {
            let side = if i % 2 == 0 { -8.0 } else { 8.0 };
            let t = Transform::from_xyz(side, 0.0, -(i as f32) * 0.25)
                .with_scale(Vec3::splat(1.0 + (i % 4) as f32));
            (Mesh3d(levels[0].clone()), t, lod.clone())
        }))
        .collect();
    let camera = app
        .world_mut()
        .spawn((Camera3d::default(), Transform::default()))
        .id();

    // Back and forth along the street (an even number of frames, so Bevy's
    // double-buffered messages see the same sequence in every cycle), moving a
    // different 1% of the entities each frame.
    let cycle = 120u64;
    let frame = |app: &mut App, f: u64| {
        let t = (f % cycle) as f32 / cycle as f32;
        let z = -250.0 * (1.0 - (t * std::f32::consts::TAU).cos());
        let w = app.world_mut();
        *w.get_mut::<Transform>(camera).unwrap() =
            Transform::from_xyz(0.0, 1.7, z).looking_at(Vec3::new(0.0, 1.7, z - 10.0), Vec3::Y);
        let k = n / 100;
        let first = ((f % cycle) as usize * k) % n;
        let up = if f % 2 == 0 { 0.5 } else { -0.5 };
        for &e in &objects[first..first + k] {
            w.get_mut::<Transform>(e).unwrap().translation.y += up;
        }
        app.update();
    };
    // One fixed step a frame: Bevy's message buffers swap every frame (see the
    // module's doc), so the sequence of frames repeats and warm-up reaches capacity.
    app.insert_resource(TimeUpdateStrategy::FixedTimesteps(1));
    for f in 0..4 * cycle {
        frame(&mut app, f);
    }
    let systems = farsight_systems_in_the_windows(&app);
    assert!(
        systems >= 4,
        "only {systems} farsight systems in the windows"
    );
    let mut changes = 0;
    let mut culled = false;
    GLOBAL.reset_window();
    GLOBAL.set_backtraces(std::env::var_os("FARSIGHT_ALLOC_BACKTRACE").is_some());
    for f in 4 * cycle..5 * cycle {
        frame(&mut app, f);
        let w = app.world();
        changes += w
            .resource::<Messages<FarsightLodChanged>>()
            .iter_current_update_messages()
            .count();
        if f % cycle == 0 {
            // At z = 0 looking down the street: 50 m ahead drawn, 320 m ahead (inside
            // Bevy's frustum) culled by farsight's distance.
            let fw = w.resource::<FarsightWorld>();
            culled = fw.is_visible(objects[200]) && !fw.is_visible(objects[1280]);
        }
    }
    let allocations = GLOBAL.window_count();

    // The frames did the work: levels changed, entities were culled, moves mirrored.
    assert!(changes > 100, "only {changes} level changes in a cycle");
    assert!(culled, "the distance cull did not hold");
    let fw = app.world().resource::<FarsightWorld>();
    for &e in &objects {
        let gt = app.world().get::<GlobalTransform>(e).unwrap();
        assert_eq!(
            fw.store().world(fw.object(e).unwrap()),
            Some(gt.to_matrix())
        );
    }
    assert_eq!(allocations, 0, "allocations in {cycle} steady-state frames");
}
